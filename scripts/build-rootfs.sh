#!/usr/bin/env bash
# Builds (once) and caches the read-only Debian root filesystem that `local` runtime VMs boot from.
#
# Usage: build-rootfs.sh            build if missing, then print the rootfs path on the last line
#        build-rootfs.sh --print-path   print the path only (no build)
#        build-rootfs.sh --print-packages   print the guest's package list (the Dockerfile installs the same)
# Env:   SANDBOX_ROOTFS_DIR   where the rootfs lives (default /var/cache/session-sandbox/rootfs-<recipe hash>)
#        SANDBOX_DEBIAN_MIRROR  Debian mirror (default http://deb.debian.org/debian)
#        SANDBOX_ROOTFS_VARIANT default (with the toolchains) or minimal (shell tools only)
set -euo pipefail

suite=bookworm
mirror="${SANDBOX_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# What agents expect from a shell box, and the toolchains of common projects (README "The guest image"
# says why each is there and what it weighs). Changing this list (or recipe_version) changes the hash, so
# a new rootfs is built next to the old one instead of mutating a tree running VMs may still use.
base_packages=(bash coreutils findutils grep sed gawk tar gzip xz-utils less procps curl ca-certificates git
  make socat iproute2 kmod)
toolchain_packages=(
  # C and C++ (gcc, g++, make, libc headers), pkg-config for native dependencies
  build-essential pkg-config
  # JavaScript and TypeScript projects
  nodejs npm
  # Python projects: the interpreter with pip and venv
  python3 python3-pip python3-venv
  # what agents reach for to read and move code
  ripgrep jq openssh-client zip unzip file patch diffutils)
# SANDBOX_ROOTFS_VARIANT=minimal: the shell tools only, without the toolchains (bench/images.ts compares
# the two); it lives under its own hash, next to the default.
case "${SANDBOX_ROOTFS_VARIANT:-default}" in
  default) packages=("${base_packages[@]}" "${toolchain_packages[@]}") ;;
  minimal) packages=("${base_packages[@]}") ;;
  *) echo "rootfs: SANDBOX_ROOTFS_VARIANT must be default or minimal" >&2; exit 2 ;;
esac
recipe_version=3
recipe="$suite ${packages[*]} v$recipe_version"
hash="$(printf '%s' "$recipe" | sha256sum | cut -c1-12)"
out="${SANDBOX_ROOTFS_DIR:-/var/cache/session-sandbox/rootfs-$hash}"
marker="$out/etc/session-sandbox-rootfs"

if [ "${1:-}" = "--print-packages" ]; then
  echo "${packages[*]}"
  exit 0
fi
if [ "${1:-}" = "--print-path" ]; then
  echo "$out"
  exit 0
fi

if [ -f "$marker" ]; then
  echo "rootfs: cached at $out" >&2
  echo "$out"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "rootfs: building needs root (debootstrap + chroot); run: sudo $0" >&2
  exit 1
fi
for tool in debootstrap chroot flock; do
  command -v "$tool" >/dev/null || { echo "rootfs: $tool missing; run scripts/install-runtime-deps.sh" >&2; exit 1; }
done

mkdir -p "$(dirname "$out")"
# Concurrent callers (setup script and a test run) wait for one build instead of racing two.
exec 9>"$out.lock"
flock 9
if [ -f "$marker" ]; then
  echo "rootfs: built by a concurrent run at $out" >&2
  echo "$out"
  exit 0
fi

# Sourced only to build: the Dockerfile runs a lone copy of this file for --print-packages.
source "$(dirname "$0")/lib/chroot.sh"
partial="$out.partial"
begin_build rootfs "$partial"

step "1/4 debootstrap $suite minbase from $mirror into $partial (30 to 90 s)"
debootstrap --variant=minbase "$suite" "$partial" "$mirror" 2>&1 | sed -u 's/^/  /' >&2

step "2/4 apt-get install ${packages[*]}"
chroot_enter
chroot_apt install -y --no-install-recommends "${packages[@]}"
chroot_leave

step "3/4 trim caches and host-derived files"
chroot_trim
rm -rf "$partial"/usr/share/info/* "$partial"/usr/share/locale/* "$partial"/root/.??*
# debootstrap copies the host's resolver (emptied above) and hostname.
echo sandbox > "$partial/etc/hostname"
printf '127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost ip6-loopback\n' > "$partial/etc/hosts"
mkdir -p "$partial/home/agent"

step "4/4 publish"
echo "$recipe built $(date -u +%FT%TZ)" > "$partial/etc/session-sandbox-rootfs"
publish_rootfs "$out"
echo "$out"
