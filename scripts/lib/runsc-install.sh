# Sourced by install-runtime-deps.sh: gVisor's runsc from Debian 13 (trixie), the only newer runsc this
# host's registries offer. Bookworm's runsc (0.0~20221219) cannot hold a Docker Engine (no devices cgroup,
# no PR_SET_CHILD_SUBREAPER) and turns no Ctrl-C into SIGINT; trixie's 0.0~20240729 does all three. runsc
# is one static binary with no dependencies, so one package from trixie changes nothing else on a bookworm
# host: apt's pinning keeps every other trixie package out (priority -1), and apt still checks the
# package against Debian's signed index (the trixie keys ship in bookworm's debian-archive-keyring).

# The oldest runsc the gvisor tier accepts (runtime/gvisor/runsc-version.ts; a test checks they agree).
RUNSC_MIN_VERSION=20240729
RUNSC_SOURCES=/etc/apt/sources.list.d/session-sandbox-trixie-runsc.sources
RUNSC_PIN=/etc/apt/preferences.d/session-sandbox-trixie-runsc

# The date part of `runsc --version` (runsc version 0.0~20240729.0 → 20240729), or 0 without a runsc.
runsc_version_date() {
  local line
  line=$(runsc --version 2>/dev/null | head -1) || true
  [[ $line =~ ~([0-9]{8}) ]] && echo "${BASH_REMATCH[1]}" || echo 0
}

ensure_runsc() {
  local have
  have=$(runsc_version_date)
  if [ "$have" -ge "$RUNSC_MIN_VERSION" ]; then
    echo "runsc: present ($(runsc --version | head -1))"
    return 0
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "runsc: $( [ "$have" = 0 ] && echo missing || echo "0.0~$have is older than 0.0~$RUNSC_MIN_VERSION"); run this script as root" >&2
    return 1
  fi
  echo "runsc: installing 0.0~$RUNSC_MIN_VERSION or newer from Debian trixie (only runsc; pinned in $RUNSC_PIN)"
  cat > "$RUNSC_SOURCES" <<'SOURCES'
# session-sandbox: gVisor's runsc from Debian 13 for the gvisor tier; every other trixie package is pinned out.
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  cat > "$RUNSC_PIN" <<'PIN'
# session-sandbox: from trixie only runsc (scripts/lib/runsc-install.sh).
Package: *
Pin: release n=trixie
Pin-Priority: -1

Package: runsc
Pin: release n=trixie
Pin-Priority: 990
PIN
  DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends runsc
  have=$(runsc_version_date)
  if [ "$have" -lt "$RUNSC_MIN_VERSION" ]; then
    echo "runsc: still 0.0~$have after the install; see apt-cache policy runsc" >&2
    return 1
  fi
  echo "runsc: done ($(runsc --version | head -1))"
}
