#!/bin/sh
# Builds the shim's C helper from plugin/shim-helper/*.c into $1 (plugin/shim runs this on first use and
# whenever a source is newer than the binary). Same compiler, flags and sources give the same program;
# nothing is downloaded. Without a compiler it refuses (126) with the reason: the shim never runs a
# command without its checks. The compiler gets a clean environment and runs outside the repository.
# A shell script, not runtime/c-build.ts like the other C helpers: it runs from the plugin's package,
# where only /bin/sh is guaranteed: runtime/ is not in that package, and Bun may not be on PATH.
out=$1
cc=${SANDBOX_SHIM_CC:-gcc}
fail() {
  echo "session-sandbox: not run: the shell shim's helper could not be built ($1); run scripts/install-runtime-deps.sh (it installs gcc), or set SANDBOX_SHIM=bun for the slower Bun shim" >&2
  exit 126
}
src=$(cd "$(dirname "$0")" && pwd -P) || fail "cannot find its sources"
case $out in /*) ;; *) out=$PWD/$out ;; esac
command -v "$cc" >/dev/null 2>&1 || fail "no C compiler: $cc not found"
mkdir -p "$(dirname "$out")" || fail "cannot create $(dirname "$out")"
tmp=$out.$$.tmp
# Written next to the target and renamed: shims starting at the same time never run a half-written file.
if ! (cd "$src" && env -i PATH="$PATH" "$cc" -std=c11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -o "$tmp" ./*.c) >"$tmp.log" 2>&1; then
  log=$(head -c 2000 "$tmp.log")
  rm -f "$tmp" "$tmp.log"
  fail "$cc failed: $log"
fi
rm -f "$tmp.log"
mv -f "$tmp" "$out" || fail "cannot write $out"
