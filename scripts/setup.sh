#!/usr/bin/env bash
# Installs everything the manager and its tests need on a Debian machine with Node + npm, as root:
# Bun (from npm, pinned), the project's packages, and the embedded runtime's OS packages and rootfs.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

BUN_VERSION="1.4.5"

step() { printf '\n==> %s\n' "$*" >&2; }

if ! command -v bun >/dev/null 2>&1 || [ "$(bun --version)" != "$BUN_VERSION" ]; then
  step "installing Bun $BUN_VERSION from npm"
  npm install --global --no-fund --no-audit "bun@$BUN_VERSION" >&2
fi

step "installing the project's packages (bun install --frozen-lockfile)"
bun install --frozen-lockfile >&2

if [ -x scripts/install-runtime-deps.sh ] || [ -f scripts/install-runtime-deps.sh ]; then
  step "installing the embedded runtime's OS packages"
  bash scripts/install-runtime-deps.sh
fi
if [ -f scripts/build-rootfs.sh ]; then
  step "building (or reusing the cached) guest root filesystem"
  bash scripts/build-rootfs.sh
fi

step "building the shell shim's helper (plugin/.build/shim-helper: users who cannot write the checkout run it prebuilt)"
sh plugin/shim-helper/build.sh plugin/.build/shim-helper >&2
chmod 0755 plugin/.build plugin/.build/shim-helper

step "installing a Compose client (validates docker-compose.sandbox.yml; no Docker engine is needed)"
bash scripts/install-compose.sh >&2
