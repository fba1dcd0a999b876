#!/usr/bin/env bash
# Builds (once) and caches a guest image with a Docker Engine, for docker VMs on the gVisor tier
# (docs/docker.md) and the tests that run one (test/actors/gvisor-docker.test.ts): the built-in rootfs plus
# Debian's docker.io, iptables and busybox-static (by extend-rootfs.sh), and Docker's compose plugin
# (`docker compose`, v2) from Debian trixie's docker-compose package: bookworm packages only the Python
# `docker-compose` v1. The trixie source is the one scripts/lib/runsc-install.sh adds (pinned: nothing is
# installed from it unasked); the package is only downloaded and its plugin copied into the image.
#
# Usage: build-docker-rootfs.sh                 build unless cached; prints the path
#        build-docker-rootfs.sh --print-path    print the path only (no build)
# Progress goes to stderr, one line per step.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
packages=(docker.io iptables busybox-static)
compose_package="docker-compose/trixie"
base="$(bash "$here/build-rootfs.sh" --print-path)"
recipe_version=1
hash="$(printf '%s' "$base ${packages[*]} $compose_package v$recipe_version" | sha256sum | cut -c1-12)"
out="/var/cache/session-sandbox/docker-rootfs-$hash"
plugin_path="usr/libexec/docker/cli-plugins/docker-compose"

if [ "${1:-}" = "--print-path" ]; then
  echo "$out"
  exit 0
fi
if [ -f "$out/$plugin_path" ]; then
  echo "docker image: cached at $out" >&2
  echo "$out"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "docker image: building needs root (extend-rootfs.sh chroots); run: sudo $0" >&2
  exit 1
fi
if ! apt-cache policy docker-compose 2>/dev/null | grep trixie >/dev/null; then
  echo "docker image: apt has no trixie source for the compose plugin; run scripts/install-runtime-deps.sh (it adds it)" >&2
  exit 1
fi

mkdir -p "$(dirname "$out")"
exec 9>"$out.lock"
flock 9
if [ -f "$out/$plugin_path" ]; then
  echo "$out"
  exit 0
fi
[ -f "$base/etc/session-sandbox-rootfs" ] || bash "$here/build-rootfs.sh" >/dev/null

building="$out.building"
download="$(mktemp -d)"
trap 'rm -rf "$building" "$download"' EXIT
rm -rf "$building"
bash "$here/extend-rootfs.sh" "$base" "$building" "${packages[@]}"

echo "docker image: the compose plugin from $compose_package" >&2
(cd "$download" && apt-get download -q "$compose_package" 2>&1 | grep -v "^W: Download is performed unsandboxed" >&2 || true)
deb="$(ls "$download"/docker-compose_*.deb 2>/dev/null | head -n1)"
[ -n "$deb" ] || { echo "docker image: apt-get download $compose_package failed" >&2; exit 1; }
dpkg-deb -x "$deb" "$download/unpacked"
install -D -m 755 "$download/unpacked/$plugin_path" "$building/$plugin_path"

mv "$building" "$out"
trap - EXIT
rm -rf "$download"
echo "docker image: done: $out ($(du -sh "$out" | cut -f1))" >&2
echo "$out"
