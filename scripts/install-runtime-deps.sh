#!/usr/bin/env bash
# Installs the Debian packages the embedded `local` runtime driver needs; quick no-op when they are present.
set -euo pipefail

# crun: OCI runtime that builds each VM; tini: PID 1 that reaps orphans (tini-static is bind-mounted into
# the guest so the rootfs needs no init); debootstrap: builds the guest rootfs; util-linux: unshare for
# the hybrid-cgroup workaround and losetup; mount: mount/umount; e2fsprogs: mkfs.ext4, e2fsck and resize2fs
# for the volumes' disk images; zstd is not needed (the rootfs is cached unpacked).
packages=(crun tini debootstrap util-linux mount e2fsprogs ca-certificates)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "runtime deps: all present (${packages[*]})"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "runtime deps: missing ${missing[*]}; run this script as root" >&2
  exit 1
fi

echo "runtime deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "runtime deps: done"
