# The session-sandbox manager as an image, for docker-compose.sandbox.yml (see docs/compose.md).
# Debian bookworm with Node + npm, Bun from npm (pinned) — the same path scripts/setup.sh takes — and the
# guest root filesystem the VMs boot, built from the package list of scripts/build-rootfs.sh.
# Pin the base by digest for reproducible builds: --build-arg DEBIAN_IMAGE=debian:bookworm-slim@sha256:…
ARG DEBIAN_IMAGE=debian:bookworm-slim

# --- The guest root filesystem (what every VM boots) ------------------------------------------------
# build-rootfs.sh uses debootstrap + chroot, which need mounts a docker build does not allow; a Debian
# image stage with the same packages gives the same userland.
FROM ${DEBIAN_IMAGE} AS guest-rootfs
COPY scripts/build-rootfs.sh /tmp/build-rootfs.sh
RUN set -eux; \
    packages="$(bash /tmp/build-rootfs.sh --print-packages)"; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $packages; \
    apt-get clean; \
    rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/* /usr/share/doc/* /usr/share/man/* \
      /usr/share/info/* /usr/share/locale/* /tmp/* /root/.??*; \
    mkdir -p /home/agent; \
    echo "$(grep -o '^suite=.*' /tmp/build-rootfs.sh | cut -d= -f2) ${packages} (Dockerfile guest-rootfs stage)" > /etc/session-sandbox-rootfs

# --- The manager ----------------------------------------------------------------------------------
FROM ${DEBIAN_IMAGE}
ARG BUN_VERSION=1.4.5
# nodejs + npm: only to install Bun from npm, as scripts/setup.sh does; tini: PID 1 (reaps msb's children).
RUN set -eux; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends ca-certificates nodejs npm tini; \
    npm install --global --no-fund --no-audit "bun@${BUN_VERSION}"; \
    npm cache clean --force; \
    apt-get clean; rm -rf /var/lib/apt/lists/*; \
    test "$(bun --version)" = "${BUN_VERSION}"

COPY --from=guest-rootfs / /opt/session-sandbox/rootfs/
# Written here, not in the stage: during a build RUN, /etc/resolv.conf, hostname and hosts are the builder's
# mounts. The guest learns nothing from the host (as in scripts/build-rootfs.sh).
RUN set -eux; \
    root=/opt/session-sandbox/rootfs; \
    rm -f "$root/etc/resolv.conf" "$root/etc/hostname" "$root/etc/hosts" "$root/.dockerenv"; \
    : > "$root/etc/resolv.conf"; \
    echo sandbox > "$root/etc/hostname"; \
    printf '127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost ip6-loopback\n' > "$root/etc/hosts"

WORKDIR /opt/session-sandbox/app
# The lockfile is the one the tests ran against. Dev dependencies are included: the pinned msb binary
# comes from the `microsandbox` devDependency.
COPY package.json bun.lock ./
RUN bun install --frozen-lockfile
COPY tsconfig.json ./
COPY app ./app
# The CLI, for `docker compose exec sandbox-manager bun run …` (docs/compose.md).
COPY cli ./cli
COPY runtime ./runtime
COPY egress ./egress
COPY workers ./workers
COPY sdk ./sdk
COPY scripts ./scripts

ENV SANDBOX_DATA_DIR=/var/lib/session-sandbox/data \
    SANDBOX_RUNTIME_DIR=/var/lib/session-sandbox/runtime \
    MSB_HOME=/var/lib/session-sandbox/runtime/msb \
    SANDBOX_ROOTFS_DIR=/opt/session-sandbox/rootfs \
    SANDBOX_RUNTIME=msb \
    SANDBOX_HOST=0.0.0.0 \
    SANDBOX_PORT=7878
VOLUME ["/var/lib/session-sandbox/data", "/var/lib/session-sandbox/runtime"]
EXPOSE 7878
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["bun", "run", "app/main.ts"]
