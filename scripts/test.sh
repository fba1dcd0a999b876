#!/usr/bin/env bash
# The README's test command (and CI's, via .ci/run): set everything up, typecheck, run every test file.
# The files run in parallel, each in its own `bun test` process (scripts/run-tests.ts); arguments go to
# the runner (`--jobs N`, `--unit`, path filters).
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
bash scripts/install-test-deps.sh || exit 1

echo "==> typecheck (tsc, including the type-contract tests in test/types/)" >&2
bun run typecheck || exit 1

echo "==> tests" >&2
exec bun scripts/run-tests.ts "$@"
