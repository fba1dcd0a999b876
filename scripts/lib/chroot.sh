# shellcheck shell=bash
# Sourced by build-rootfs.sh and extend-rootfs.sh: the steps both take to install Debian packages into a
# root filesystem built in a partial directory, then published whole by a rename.
# Usage: begin_build <label> <partial>   then step, chroot_enter, chroot_apt, chroot_leave, chroot_trim and
#        publish_rootfs <out>; until publish_rootfs, any exit unmounts and removes <partial>.

# Progress on stderr, one line per step: "<label>: [<seconds since begin_build>s] <text>".
step() { echo "$build_label: [$((SECONDS - build_start))s] $*" >&2; }

discard_partial() {
  umount "$build_partial/proc" 2>/dev/null || true
  rm -rf "$build_partial"
}

begin_build() {
  build_label=$1 build_partial=$2 build_start=$SECONDS
  trap discard_partial EXIT
  rm -rf "$build_partial"
}

# /proc for the maintainer scripts; no daemon may start inside the chroot while packages are configured.
chroot_enter() {
  mount -t proc proc "$build_partial/proc"
  printf '#!/bin/sh\nexit 101\n' > "$build_partial/usr/sbin/policy-rc.d"
  chmod +x "$build_partial/usr/sbin/policy-rc.d"
}

chroot_leave() { umount "$build_partial/proc"; }

# apt-get in the chroot with these arguments, its output cut to a line per package fetched or set up and
# the errors; returns apt-get's status. Use-Pty=0: the chroot has no /dev/pts, and apt would complain that
# it cannot open one for its log.
chroot_apt() {
  chroot "$build_partial" env DEBIAN_FRONTEND=noninteractive apt-get -q -o Dpkg::Use-Pty=0 "$@" 2>&1 \
    | grep -E --line-buffered '^(Get|Setting up|E:|W:|Err)' | sed -u 's/^/  /' >&2
  return "${PIPESTATUS[0]}"
}

# What a guest does not need: apt's lists and caches, logs, docs, man pages, /tmp, and the resolver the
# build used (the guest must not learn anything from the host).
chroot_trim() {
  chroot "$build_partial" apt-get clean
  rm -f "$build_partial/usr/sbin/policy-rc.d"
  rm -rf "$build_partial"/var/lib/apt/lists/* "$build_partial"/var/cache/apt/*.bin "$build_partial"/var/log/* \
    "$build_partial"/usr/share/doc/* "$build_partial"/usr/share/man/* "$build_partial"/tmp/*
  printf '' > "$build_partial/etc/resolv.conf"
}

# The finished tree becomes <out> at once (a rename): a reader sees all of it or nothing.
publish_rootfs() {
  mv "$build_partial" "$1"
  trap - EXIT
  step "done: $1 ($(du -sh "$1" | cut -f1))"
}
