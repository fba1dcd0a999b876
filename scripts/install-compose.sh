#!/usr/bin/env bash
# Makes a Compose client available for validating docker-compose.sandbox.yml (`config` only: no Docker
# engine runs here). Prefers `docker compose` (v2 plugin) when present; otherwise installs Debian's
# `docker-compose` package (1.29.x, the only Compose client in bookworm's archive). Idempotent.
# Prints the command to use on its last line: "docker compose" or "docker-compose".
set -euo pipefail

if docker compose version >/dev/null 2>&1; then
  echo "compose: docker compose plugin present ($(docker compose version --short 2>/dev/null || echo unknown))" >&2
  echo "docker compose"
  exit 0
fi
if command -v docker-compose >/dev/null 2>&1; then
  echo "compose: $(docker-compose version --short 2>/dev/null || echo docker-compose) present" >&2
  echo "docker-compose"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "compose: no Compose client; run this script as root (it installs Debian's docker-compose)" >&2
  exit 1
fi
echo "compose: installing Debian's docker-compose package" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2
apt-get install -y -q --no-install-recommends docker-compose >&2
echo "docker-compose"
