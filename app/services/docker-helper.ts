// The guest's Docker helper, `sandbox-docker` (docs/docker.md): the manager installs it in a session's VM
// and runs it there; the guest runs it too. POSIX sh, so it works with an image's dash or busybox.
//   start   starts the daemon unless it answers already, and waits (up to SANDBOX_DOCKER_WAIT s, default
//           180: dockerd can wait long for containerd on a fresh VM) until `docker version` shows a server;
//           serialized by a lock, so concurrent starts make one daemon
//   status  the server's version, or exit 3
//   log     the end of the daemon's log (its supervisor's lines among it)
//   stop    stops the daemon (it stops its containers)    purge   stops it and removes its data and log
// The daemon runs under a supervisor (`supervise`, in its own session, so it outlives the command that
// started it) that restarts it when it dies, at most RESTARTS times. Its data is on the home volume (kept
// across VM stops), or in a gVisor docker VM on the data root the VM mounts for it; its state (pids, lock,
// log) is under /run, the VM's own, or /tmp where the image's root is read-only. The user's daemon.json
// (~/.docker) is passed on.

import { GUEST_DOCKER_DATA_ROOT } from "../../runtime/guest-layout";

/** Where the manager installs the helper (on every image's PATH); ~/.local/bin where the root is read-only. */
export const DOCKER_HELPER_PATH = "/usr/local/bin/sandbox-docker";

/** Exit codes the manager tells apart. */
export const DOCKER_HELPER_EXIT = { notInstalled: 69, noAnswer: 70, busy: 75, notRunning: 3 } as const;

export const DOCKER_HELPER = `#!/bin/sh
# sandbox-docker: starts and supervises this VM's Docker Engine (installed by session-sandbox; docs/docker.md).
set -u
# Docker's static binaries unpacked into the home volume (kept when the VM is recreated) count too.
PATH="$PATH:\${HOME:-/home/agent}/.local/bin:\${HOME:-/home/agent}/bin"
STATE=/run/sandbox-docker
mkdir -p "$STATE" 2>/dev/null || STATE=/tmp/sandbox-docker
# A gVisor docker VM mounts the daemon a data root of its own (runtime/gvisor/docker-profile.ts: overlay2
# cannot sit on a directory bound from the host); elsewhere the data is on the home volume.
if grep -q " ${GUEST_DOCKER_DATA_ROOT} " /proc/mounts 2>/dev/null; then DATA=${GUEST_DOCKER_DATA_ROOT}; else DATA="\${HOME:-/home/agent}/.local/share/docker"; fi
# The user's daemon settings (registries, mirrors), on the home volume so they outlive the VM.
CONFIG="\${HOME:-/home/agent}/.docker/daemon.json"
LOG="$STATE/dockerd.log"
WAIT="\${SANDBOX_DOCKER_WAIT:-180}"
RESTARTS=5
SELF=$0

alive() { [ -f "$1" ] && kill -0 "$(cat "$1" 2>/dev/null)" 2>/dev/null; }
ready() { docker version --format '{{.Server.Version}}' 2>/dev/null; }

lock() {
  mkdir -p "$STATE"
  tries=0
  while ! mkdir "$STATE/lock" 2>/dev/null; do
    holder=$(cat "$STATE/lock/pid" 2>/dev/null || true)
    if [ -n "$holder" ] && ! kill -0 "$holder" 2>/dev/null; then rm -rf "$STATE/lock"; continue; fi
    tries=$((tries + 1))
    if [ "$tries" -gt $((WAIT * 10 + 300)) ]; then echo "sandbox-docker: another start or stop holds $STATE/lock (pid $holder)" >&2; exit ${DOCKER_HELPER_EXIT.busy}; fi
    sleep 0.1
  done
  echo $$ > "$STATE/lock/pid"
  trap 'rm -rf "$STATE/lock"' EXIT
}

start() {
  for program in dockerd docker; do
    command -v "$program" >/dev/null 2>&1 || { echo "sandbox-docker: this VM's image has no $program: give the session an image with Docker Engine (Debian's docker.io, containerd, runc, iptables and docker-compose)" >&2; exit ${DOCKER_HELPER_EXIT.notInstalled}; }
  done
  lock
  if version=$(ready); then echo "docker $version ready"; exit 0; fi
  if ! alive "$STATE/supervisor.pid"; then
    rm -f "$STATE/gave-up" "$STATE/stopping"
    mkdir -p "$DATA" "$(dirname "$LOG")"
    if command -v setsid >/dev/null 2>&1; then setsid sh "$SELF" supervise </dev/null >>"$LOG" 2>&1 &
    else sh "$SELF" supervise </dev/null >>"$LOG" 2>&1 &
    fi
    echo $! > "$STATE/supervisor.pid"
  fi
  waited=0
  while [ "$waited" -lt $((WAIT * 2)) ]; do
    if version=$(ready); then echo "docker $version ready"; exit 0; fi
    [ ! -e "$STATE/gave-up" ] || break
    sleep 0.5
    waited=$((waited + 1))
  done
  echo "sandbox-docker: the daemon did not answer within $WAIT s; the end of $LOG:" >&2
  tail -n 20 "$LOG" >&2
  exit ${DOCKER_HELPER_EXIT.noAnswer}
}

# Which netfilter the daemon gets, decided once per supervisor: the image's iptables where it works (a
# kernel of the VM's own); else, as in a gVisor VM, whose netfilter speaks only the legacy interface while
# Debian's iptables is the nftables front end, iptables-legacy under the names dockerd runs, for the rules
# of its embedded DNS in each container's namespace, and no bridge rules (--iptables=false: gVisor has none
# of the addrtype match and MASQUERADE target they need, and the VM's containers have no route out anyway);
# else none at all: containers still reach each other by address, not by name.
choose_iptables() {
  DAEMON_FLAGS=
  iptables -t filter -L -n >/dev/null 2>&1 && return
  DAEMON_FLAGS="--iptables=false --ip6tables=false"
  if ! iptables-legacy -t filter -L -n >/dev/null 2>&1; then echo "sandbox-docker: no iptables works here; the daemon programs no rules"; return; fi
  mkdir -p "$STATE/bin"
  for family in iptables ip6tables; do
    for suffix in "" -save -restore; do
      tool=$(command -v "$family-legacy$suffix") && ln -sf "$tool" "$STATE/bin/$family$suffix"
    done
  done
  PATH="$STATE/bin:$PATH"
  echo "sandbox-docker: iptables is iptables-legacy for the daemon, which programs no bridge rules"
}

supervise() {
  echo $$ > "$STATE/supervisor.pid"
  choose_iptables
  child=
  trap 'touch "$STATE/stopping"; [ -z "$child" ] || kill "$child" 2>/dev/null' TERM INT
  restarts=0
  while :; do
    echo "sandbox-docker: starting dockerd, data in $DATA"
    # The bridge a daemon that died left (dockerd makes it again): gVisor does not report a link's kind,
    # and dockerd refuses a docker0 it cannot tell is a bridge.
    ip link delete docker0 >/dev/null 2>&1 || true
    set -- --data-root "$DATA" $DAEMON_FLAGS
    [ ! -f "$CONFIG" ] || set -- "$@" --config-file "$CONFIG"
    dockerd "$@" &
    child=$!
    echo "$child" > "$STATE/dockerd.pid"
    # A trapped signal ends a wait early: wait again until dockerd has stopped its containers.
    code=0
    wait "$child" || code=$?
    while kill -0 "$child" 2>/dev/null; do wait "$child" || code=$?; done
    [ ! -e "$STATE/stopping" ] || exit 0
    restarts=$((restarts + 1))
    if [ "$restarts" -gt "$RESTARTS" ]; then echo "sandbox-docker: dockerd exited ($code) $restarts times; gave up"; touch "$STATE/gave-up"; exit 1; fi
    echo "sandbox-docker: dockerd exited ($code); restart $restarts of $RESTARTS"
    sleep 2
  done
}

stop() {
  # The supervisor goes first and is waited for too: one that saw dockerd die after "stopping" was removed
  # would start it again.
  touch "$STATE/stopping" 2>/dev/null || true
  for name in supervisor dockerd; do
    if alive "$STATE/$name.pid"; then kill "$(cat "$STATE/$name.pid")" 2>/dev/null || true; fi
  done
  waited=0
  while { alive "$STATE/dockerd.pid" || alive "$STATE/supervisor.pid"; } && [ "$waited" -lt 300 ]; do sleep 0.1; waited=$((waited + 1)); done
  for name in supervisor dockerd; do
    if alive "$STATE/$name.pid"; then kill -9 "$(cat "$STATE/$name.pid")" 2>/dev/null || true; fi
  done
  rm -f "$STATE/supervisor.pid" "$STATE/dockerd.pid" "$STATE/gave-up" "$STATE/stopping"
}

case "\${1:-}" in
  start) start ;;
  supervise) supervise ;;
  status) if version=$(ready); then echo "docker $version ready"; else echo "docker is not running"; exit ${DOCKER_HELPER_EXIT.notRunning}; fi ;;
  log) tail -n "\${2:-100}" "$LOG" 2>/dev/null || echo "no log yet: the daemon was never started" ;;
  stop) lock; stop; echo "docker stopped" ;;
  purge) lock; stop; rm -rf "$DATA" "$LOG"; echo "docker stopped; its data and log removed" ;;
  *) echo "usage: sandbox-docker start|status|log [lines]|stop|purge" >&2; exit 64 ;;
esac
`;

/**
 * Installs the helper given as $1 (written beside it and renamed over it, so a running copy is never cut)
 * and runs it with the rest of the arguments; by `sh`, so a home volume mounted noexec still runs it.
 */
export const INSTALL_AND_RUN = `set -e
helper=$1; shift
dir=${DOCKER_HELPER_PATH.slice(0, DOCKER_HELPER_PATH.lastIndexOf("/"))}
if ! { mkdir -p "$dir" && [ -w "$dir" ]; } 2>/dev/null; then dir="\${HOME:-/home/agent}/.local/bin"; mkdir -p "$dir"; fi
printf '%s' "$helper" > "$dir/.sandbox-docker.$$"
chmod 755 "$dir/.sandbox-docker.$$"
mv -f "$dir/.sandbox-docker.$$" "$dir/sandbox-docker"
exec sh "$dir/sandbox-docker" "$@"`;
