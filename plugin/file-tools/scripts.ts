// The `sh -c` scripts behind the file tools. They run where the session's files are (the VM, another
// provider's sandbox, or the host for an unsandboxed session), so symlinks resolve in that mount
// namespace. Every value (path, pattern, content) comes from the environment (OCF_*), never from the
// script text. Each script prints a status line, then its payload, and reports failures in-band.
// Needs: sh, GNU coreutils, findutils, grep and sed, awk; git (optional, for ignore rules).

/** Content travels base64-encoded in OCF_C0…OCF_C15 (each at most CHUNK_CHARS). */
export const CONTENT_VARS = 16;
export const CHUNK_CHARS = 60 * 1024;

const CONTENT = `content() { printf '%s' ${Array.from({ length: CONTENT_VARS }, (_, i) => `"\${OCF_C${i}-}"`).join(" ")} | base64 -d; }`;

/** What a path is now: dir, special, absent, or the sha256 of a regular file's bytes (symlinks followed). */
const STATE = `state() { if [ -d "$1" ]; then printf dir; elif [ -f "$1" ]; then sha256sum < "$1" | cut -d ' ' -f 1; elif [ -e "$1" ]; then printf special; else printf absent; fi; }`;

/** Entries of a directory as "d|f<TAB>name<NUL>" (d also for a symlink to a directory). */
const ENTRIES = `entries() {
  for e in "$1"/* "$1"/.[!.]* "$1"/..?*; do
    [ -e "$e" ] || [ -L "$e" ] || continue
    if [ -d "$e" ]; then printf 'd\\t%s\\0' "\${e##*/}"; else printf 'f\\t%s\\0' "\${e##*/}"; fi
  done
}`;

/**
 * The files under the current directory, relative, NUL-separated: inside a git work tree the tracked and
 * untracked-but-not-ignored files (the ignore rules ripgrep applies), else every file; regular files only
 * (ripgrep does not follow symlinks either), never anything under .git.
 */
const FILES = `files() {
  if [ "$(git -c safe.directory='*' rev-parse --is-inside-work-tree 2>/dev/null)" = true ]; then
    git -c safe.directory='*' -c core.fsmonitor=false ls-files -z --cached --others --exclude-standard 2>/dev/null |
      sed -z 's|^|./|' | xargs -0 -r sh -c 'exec find "$@" -maxdepth 0 -type f -print0 2>/dev/null' sh
  else
    find . -name .git -prune -o -type f -print0 2>/dev/null
  fi | sed -z 's|^\\./||' | grep -zv -E '(^|/)\\.git(/|$)'
}`;

/**
 * read: "dir" + entries | "missing" + the parent's entries | "special" | "file <sha256> <size>", the
 * first 4 KiB base64 on one line, then lines OCF_OFFSET… (at most OCF_LIMIT, each cut to OCF_LINE_BYTES,
 * about OCF_CAP bytes in all) and last the file's line count. Lines end at \\r\\n, \\r or \\n, as OpenCode
 * splits them.
 */
export const READ_SCRIPT = `${ENTRIES}
p=$OCF_PATH
if [ -d "$p" ]; then printf 'dir\\n'; entries "$p"; exit 0; fi
if [ ! -e "$p" ]; then printf 'missing\\n'; d=$(dirname -- "$p"); if [ -d "$d" ]; then entries "$d"; fi; exit 0; fi
if [ ! -f "$p" ]; then printf 'special\\n'; exit 0; fi
sum=$(sha256sum < "$p" 2>/dev/null | cut -d ' ' -f 1); size=$(wc -c < "$p" 2>/dev/null)
if [ -z "$sum" ] || [ -z "$size" ]; then printf 'unreadable\\n'; exit 0; fi
printf 'file %s %s\\n' "$sum" "$size"
head -c 4096 < "$p" | base64 | tr -d '\\n'
printf '\\n'
LC_ALL=C awk -v o="$OCF_OFFSET" -v l="$OCF_LIMIT" -v w="$OCF_LINE_BYTES" -v cap="$OCF_CAP" '
  BEGIN { RS = "\\r\\n|\\r|\\n" }
  { n++ }
  n >= o && n < o + l && b <= cap { s = substr($0, 1, w); printf "%s\\n", s; b += length(s) + 1 }
  END { printf "%d\\n", n }' < "$p"`;

/** The whole file, base64 on one line (images and PDFs, which OpenCode attaches). */
export const BASE64_SCRIPT = `base64 < "$OCF_PATH" | tr -d '\\n'`;

/** "dir" | "file" | "absent": what a path outside the project is, for the permission prompt. */
export const KIND_SCRIPT = `if [ -d "$OCF_PATH" ]; then printf 'dir\\n'; elif [ -e "$OCF_PATH" ]; then printf 'file\\n'; else printf 'absent\\n'; fi`;

/** Before a change: "dir" | "absent" | "special" | "unreadable" | "file <mtime s> <sha256>" + the bytes. */
export const PROBE_SCRIPT = `p=$OCF_PATH
if [ -d "$p" ]; then printf 'dir\\n'; exit 0; fi
if [ ! -e "$p" ]; then printf 'absent\\n'; exit 0; fi
if [ ! -f "$p" ]; then printf 'special\\n'; exit 0; fi
sum=$(sha256sum < "$p" 2>/dev/null | cut -d ' ' -f 1)
if [ -z "$sum" ]; then printf 'unreadable\\n'; exit 0; fi
printf 'file %s %s\\n' "$(date -r "$p" +%s 2>/dev/null || printf 0)" "$sum"
cat < "$p"`;

/**
 * Writes content in place (through symlinks, keeping the file's mode, as OpenCode does), creating parent
 * directories. OCF_MODE: put (all content in this job) | begin/append (stage into a temp file) | commit
 * (the last part, then copy the staged file over the path). put/commit first check that the path is
 * still OCF_EXPECT (the state the tool read), else print "changed <state>". Prints "ok <new state>" or
 * "failed <reason>".
 */
export const WRITE_SCRIPT = `${CONTENT}
${STATE}
p=$OCF_PATH
case "$OCF_MODE" in
  begin) if t=$(mktemp) && content > "$t"; then printf 'tmp %s\\n' "$t"; else printf 'failed could not stage the content in a temp file\\n'; fi; exit 0 ;;
  append) if content >> "$OCF_TMP"; then printf 'ok\\n'; else printf 'failed could not stage the content in a temp file\\n'; fi; exit 0 ;;
esac
t=\${OCF_TMP-}
now=$(state "$p")
if [ -n "\${OCF_EXPECT-}" ] && [ "$now" != "$OCF_EXPECT" ]; then [ -n "$t" ] && rm -f -- "$t"; printf 'changed %s\\n' "$now"; exit 0; fi
if err=$( { mkdir -p -- "$(dirname -- "$p")" && if [ -n "$t" ]; then content >> "$t" && cat < "$t" > "$p"; else content > "$p"; fi; } 2>&1 ); then
  [ -n "$t" ] && rm -f -- "$t"
  printf 'ok %s\\n' "$(state "$p")"
else
  [ -n "$t" ] && rm -f -- "$t"
  printf 'failed %s\\n' "$err"
fi`;

/** Deletes a file if it is still OCF_EXPECT: "ok absent" | "changed <state>" | "failed <reason>". */
export const REMOVE_SCRIPT = `${STATE}
p=$OCF_PATH
now=$(state "$p")
if [ -n "\${OCF_EXPECT-}" ] && [ "$now" != "$OCF_EXPECT" ]; then printf 'changed %s\\n' "$now"; exit 0; fi
if err=$(rm -f -- "$p" 2>&1); then printf 'ok absent\\n'; else printf 'failed %s\\n' "$err"; fi`;

/**
 * glob: "notdir" | "missing" | "ok" + at most OCF_LIMIT relative paths (NUL-separated) whose relative
 * path matches the extended regex OCF_REGEX (or does not, with OCF_INVERT=1); hidden paths only with
 * OCF_HIDDEN=1.
 */
export const GLOB_SCRIPT = `${FILES}
d=$OCF_DIR
if [ -f "$d" ]; then printf 'notdir\\n'; exit 0; fi
cd -- "$d" 2>/dev/null || { printf 'missing\\n'; exit 0; }
printf 'ok\\n'
files | if [ "$OCF_HIDDEN" = 1 ]; then cat; else grep -zv -E '(^|/)\\.'; fi |
  if [ "$OCF_INVERT" = 1 ]; then grep -zv -E -e "$OCF_REGEX"; else grep -z -E -e "$OCF_REGEX"; fi |
  head -z -n "$OCF_LIMIT"`;

/**
 * grep: "missing" | "badpattern <grep's message>" | "ok -P|-E dir|file" + at most OCF_LIMIT matching
 * lines as "<path>NUL<line>:<text>" (each cut to OCF_LINE_BYTES), paths relative to OCF_TARGET (a
 * directory) or to its directory (a file, searched alone). A directory search covers every file (hidden
 * ones too, as OpenCode's grep does) whose path matches OCF_INCLUDE. Perl-compatible regexes where grep
 * has them (closest to ripgrep's); binary files are skipped.
 */
export const GREP_SCRIPT = `${FILES}
t=$OCF_TARGET
if [ -d "$t" ]; then d=$t; f=; kind=dir; elif [ -e "$t" ]; then d=$(dirname -- "$t"); f=\${t##*/}; kind=file; else printf 'missing\\n'; exit 0; fi
cd -- "$d" 2>/dev/null || { printf 'missing\\n'; exit 0; }
if printf 'x\\n' | LC_ALL=C grep -qP 'x' 2>/dev/null; then mode=-P; else mode=-E; fi
err=$(printf '' | LC_ALL=C grep $mode -e "$OCF_PATTERN" 2>&1 >/dev/null)
if [ $? -eq 2 ]; then printf 'badpattern %s\\n' "$err"; exit 0; fi
printf 'ok %s %s\\n' "$mode" "$kind"
if [ -n "$f" ]; then printf '%s\\0' "$f"; else files | if [ -n "\${OCF_INCLUDE-}" ]; then grep -z -E -e "$OCF_INCLUDE"; else cat; fi; fi |
  sed -z 's|^|./|' | xargs -0 -r env LC_ALL=C grep $mode -n -H -I -s -Z -e "$OCF_PATTERN" -- |
  head -n "$OCF_LIMIT" | cut -b "1-$OCF_LINE_BYTES"`;
