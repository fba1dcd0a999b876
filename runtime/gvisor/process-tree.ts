// Which guest processes belong to one exec, from the guest's /proc. The local tier puts each exec in a
// cgroup of its own; gVisor 20221219 offers neither host-visible guest processes nor PR_SET_CHILD_SUBREAPER
// (tini refuses), so an exec's tree is computed instead: every `runsc exec` process leads a session and
// process group of its own (pid = pgid = sid), and belonging is inherited — descendants by parent pid,
// whatever shares a process group or session with a member (a double-forked orphan re-parented to init),
// and whatever carries the exec's marker in its environment (EXEC_MARKER_ENV, as msb's kill does: a full
// daemon that left its session and was orphaned). Escapes only a daemon that also re-executed itself
// without the variable.
export type GuestProcess = { pid: number; ppid: number; pgid: number; sid: number; marked?: boolean };

/** Set in every gvisor exec's environment (the same name msb's exec uses); reserved: the caller cannot set it. */
export const EXEC_MARKER_ENV = "SESSION_SANDBOX_EXEC_ID";

/**
 * The guest-side script that prints the process table: `M <stat line>` for a process whose environment
 * holds `$1` (the marker, NAME=VALUE), `- <stat line>` for the others. One grep reads every environment.
 */
export const PROCESS_TABLE_SCRIPT = [
  'marked=" $(grep -lzxF "$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 | tr "\n" " ")"',
  'for d in /proc/[0-9]*; do',
  '  read -r line < "$d/stat" 2>/dev/null || continue',
  '  case "$marked" in *" ${d#/proc/} "*) echo "M $line" ;; *) echo "- $line" ;; esac',
  "done",
].join("\n");

/** Parses PROCESS_TABLE_SCRIPT's output. */
export function parseProcessTable(text: string): GuestProcess[] {
  const lines = text.split("\n").filter((line) => /^[M-] /.test(line));
  const marked = new Set(lines.filter((line) => line.startsWith("M ")).map((line) => Number.parseInt(line.slice(2), 10)));
  return parseStatLines(lines.map((line) => line.slice(2)).join("\n")).map((p) => (marked.has(p.pid) ? { ...p, marked: true } : p));
}

/**
 * Parses `/proc/<pid>/stat` lines; the command name may hold spaces and parentheses, so fields start after the last ')'.
 * Exported so a test checks it directly.
 */
export function parseStatLines(text: string): GuestProcess[] {
  const processes: GuestProcess[] = [];
  for (const line of text.split("\n")) {
    const close = line.lastIndexOf(")");
    const pid = Number.parseInt(line, 10);
    if (close < 0 || !Number.isInteger(pid) || pid <= 0) continue;
    const [, ppid, pgid, sid] = line.slice(close + 2).split(" ").map(Number);
    if ([ppid, pgid, sid].every((n) => Number.isInteger(n))) processes.push({ pid, ppid: ppid!, pgid: pgid!, sid: sid! });
  }
  return processes;
}

/** Every live process of the exec led by `root` (and, `marked`, of its environment marker), root included; never the VM's init (pid 1). */
export function execTree(processes: GuestProcess[], root: number): number[] {
  const members = new Set<number>([root]);
  const groups = new Set<number>([root]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of processes) {
      if (members.has(p.pid) || p.pid === 1) continue;
      if (members.has(p.ppid) || groups.has(p.pgid) || groups.has(p.sid) || p.marked) {
        members.add(p.pid);
        // A member's own group or session (after setsid/setpgid) is the exec's too; init's never is.
        for (const id of [p.pgid, p.sid]) if (id > 1) groups.add(id);
        grew = true;
      }
    }
  }
  const live = new Set(processes.map((p) => p.pid));
  return [...members].filter((pid) => live.has(pid));
}
