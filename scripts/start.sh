#!/usr/bin/env bash
# The README's run command: set everything up, then run the manager in the foreground.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "==> starting the manager (the API token: bun run token)" >&2
exec bun run app/main.ts
