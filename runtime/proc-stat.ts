// A process's identity by /proc: its stat fields and start time, so a pid is never mistaken for a reused one.
import { readdirSync, readFileSync } from "node:fs";

/**
 * The fields of /proc/PID/stat after the command name (field 3, the state, first), or undefined when the
 * process is gone. The command name may hold spaces and parentheses: the fields start after the last ')'.
 */
export function procStatFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/** Field 22 of /proc/PID/stat: the start time in clock ticks since boot. */
export function processStartTime(pid: number): string | undefined {
  return procStatFields(pid)?.[19];
}

/** Whether the process that had `startTime` still runs: the same start time, and not a zombie waiting to be reaped. */
export function processAlive(pid: number, startTime: string): boolean {
  const fields = procStatFields(pid);
  return fields !== undefined && fields[19] === startTime && fields[0] !== "Z" && fields[0] !== "X";
}

/**
 * Gone, or a zombie nobody has reaped yet: either way it runs nothing any more. (A thread-group leader that
 * exited while its other threads run is a zombie too: it counts only once it is the last thread.)
 */
export function processExited(pid: number): boolean {
  const state = procStatFields(pid)?.[0];
  if (state === undefined) return true;
  if (state !== "Z" && state !== "X") return false;
  try {
    return readdirSync(`/proc/${pid}/task`).length <= 1;
  } catch {
    return true;
  }
}
