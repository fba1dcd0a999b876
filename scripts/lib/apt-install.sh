# Sourced by the install scripts: installs the Debian packages that are missing, or says they are all present.
# Usage: ensure_debian_packages <label> <package>...
ensure_debian_packages() {
  local label=$1
  shift
  local missing=() p
  for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "$label: all present ($*)"
    return 0
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "$label: missing ${missing[*]}; run this script as root" >&2
    return 1
  fi
  echo "$label: installing ${missing[*]}"
  # No package may start a daemon while installing (docker-registry would start a system-wide registry).
  local policy=/usr/sbin/policy-rc.d created=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && created=1
  fi
  local status=0
  DEBIAN_FRONTEND=noninteractive apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" || status=$?
  if [ "$created" = 1 ]; then rm -f "$policy"; fi
  [ "$status" = 0 ] && echo "$label: done"
  return "$status"
}
