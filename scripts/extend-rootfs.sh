#!/usr/bin/env bash
# Builds a guest image that is the built-in root filesystem plus extra Debian packages (the manager's
# image service runs this when a setting or session asks for `{"kind":"recipe","packages":[...]}`).
#
# Usage: extend-rootfs.sh BASE OUT PACKAGE...
#   BASE  the built-in rootfs (scripts/build-rootfs.sh --print-path), copied, never modified
#   OUT   where the new rootfs is published, atomically (a rename) once complete
# Env:   SANDBOX_APT_SOURCES    sources.list lines the packages come from (default: the Debian mirror)
#        SANDBOX_DEBIAN_MIRROR  Debian mirror (default http://deb.debian.org/debian)
# Progress goes to stderr, one line per step and per package fetched or set up.
#
# The packages are chosen by the operator through the authenticated API, never by a guest; their
# maintainer scripts run in a chroot of the copy, as in the built-in image's own build.
set -euo pipefail

if [ $# -lt 3 ]; then
  echo "usage: $0 BASE OUT PACKAGE..." >&2
  exit 2
fi
base=$1 out=$2
shift 2
packages=("$@")
mirror="${SANDBOX_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
sources="${SANDBOX_APT_SOURCES:-deb $mirror bookworm main}"

if [ -d "$out" ]; then
  echo "image: cached at $out" >&2
  exit 0
fi
if [ ! -f "$base/etc/session-sandbox-rootfs" ]; then
  echo "image: the built-in rootfs is not built at $base; run scripts/build-rootfs.sh" >&2
  exit 1
fi

source "$(dirname "$0")/lib/chroot.sh"
partial="$out.partial"
begin_build image "$partial"
mkdir -p "$(dirname "$out")"

step "1/4 copy the built-in rootfs ($(du -sh "$base" 2>/dev/null | cut -f1))"
cp -a --reflink=auto "$base" "$partial"

step "2/4 apt-get install ${packages[*]}"
chroot_enter
cp /etc/resolv.conf "$partial/etc/resolv.conf" 2>/dev/null || true
mv "$partial/etc/apt/sources.list" "$partial/etc/apt/sources.list.saved" 2>/dev/null || true
printf '%s\n' "$sources" > "$partial/etc/apt/sources.list"
chroot_apt update || { step "apt-get update failed: check SANDBOX_APT_SOURCES ($sources)"; exit 1; }
chroot_apt install -y --no-install-recommends "${packages[@]}" || { step "apt-get install failed"; exit 1; }
chroot_leave

step "3/4 trim caches and host-derived files"
chroot_trim
rm -f "$partial/etc/apt/sources.list"
mv "$partial/etc/apt/sources.list.saved" "$partial/etc/apt/sources.list" 2>/dev/null || true

step "4/4 publish"
echo "$(cat "$base/etc/session-sandbox-rootfs") + ${packages[*]} built $(date -u +%FT%TZ)" > "$partial/etc/session-sandbox-rootfs"
publish_rootfs "$out"
