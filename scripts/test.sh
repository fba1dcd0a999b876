#!/usr/bin/env bash
# The README's test command (and CI's, via .ci/run): set everything up, typecheck, run every suite.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
bash scripts/install-test-deps.sh || exit 1

echo "==> typecheck (tsc, including the type-contract tests in test/types/)" >&2
bun run typecheck || exit 1

echo "==> bun test" >&2
log=$(mktemp)
bun test --timeout 120000 "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
passed=$(grep -Eo '^ *[0-9]+ pass$' "$log" | tail -1 | grep -Eo '[0-9]+' || echo 0)
failed=$(grep -Eo '^ *[0-9]+ fail$' "$log" | tail -1 | grep -Eo '[0-9]+' || echo 0)
skipped=$(grep -Eo '^ *[0-9]+ skip$' "$log" | tail -1 | grep -Eo '[0-9]+' || echo 0)
rm -f "$log"
echo "tests: ${passed} passed, ${failed} failed, ${skipped} skipped"
exit "$status"
