#!/usr/bin/env bash
# Installs the Debian packages the embedded `local` and `gvisor` runtime drivers need; quick no-op when they are present.
set -euo pipefail

# crun: OCI runtime that builds each VM; tini: PID 1 that reaps orphans (tini-static is bind-mounted into
# the guest so the rootfs needs no init); debootstrap: builds the guest rootfs; util-linux: unshare for
# the hybrid-cgroup workaround and losetup; mount: mount/umount; e2fsprogs: mkfs.ext4, e2fsck and resize2fs
# for the volumes' disk images; zstd is not needed (the rootfs is cached unpacked); skopeo and umoci: pull
# OCI images from a registry (skopeo copies into an OCI layout, umoci unpacks the layers) when a setting or
# session chooses one — neither runs anything from the image. runsc: gVisor, the runtime of the `gvisor`
# tier (runtime/gvisor/), comes from Debian trixie (scripts/lib/runsc-install.sh says why); gcc builds that
# tier's seccomp-exec (runtime/gvisor/seccomp-exec.c) and, with libc6-dev's static libc, the local tier's
# exec agent (runtime/local/exec-agent.c).
# fuse3 and libfuse3-dev: the repository view (runtime/repo-fs/), a FUSE daemon per VM that applies the
# repository rules to every change a guest makes (docs/repository-guard.md). busybox-static: the one static
# tool set a Dockerfile build mounts into its build VM (COPY and the image's export), whatever the image has.
packages=(crun tini debootstrap util-linux mount e2fsprogs ca-certificates skopeo umoci gcc libc6-dev fuse3 libfuse3-dev busybox-static)

source "$(dirname "$0")/lib/apt-install.sh"
ensure_debian_packages "runtime deps" "${packages[@]}"
source "$(dirname "$0")/lib/runsc-install.sh"
ensure_runsc
