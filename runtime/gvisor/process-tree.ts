// Which guest processes belong to one exec, from the guest's /proc/<pid>/stat lines. The local tier puts
// each exec in a cgroup of its own; gVisor 20221219 offers neither host-visible guest processes nor
// PR_SET_CHILD_SUBREAPER (tini refuses), so an exec's tree is computed instead: every `runsc exec` process
// leads a session and process group of its own (pid = pgid = sid), and belonging is inherited —
// descendants by parent pid, and whatever shares a process group or session with a member, which catches
// a double-forked orphan re-parented to init. Not caught: a process that both leaves its session (setsid)
// and is orphaned (a full daemon); it lives until the VM stops.
export type GuestProcess = { pid: number; ppid: number; pgid: number; sid: number };

/** Parses `/proc/<pid>/stat` lines; the command name may hold spaces and parentheses, so fields start after the last ')'. */
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

/** Every live process of the exec led by `root`, root included; never the VM's init (pid 1). */
export function execTree(processes: GuestProcess[], root: number): number[] {
  const members = new Set<number>([root]);
  const groups = new Set<number>([root]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of processes) {
      if (members.has(p.pid) || p.pid === 1) continue;
      if (members.has(p.ppid) || groups.has(p.pgid) || groups.has(p.sid)) {
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
