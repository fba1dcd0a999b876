// CPU % from two reads of a VM's usage (GET /api/vms/:name/stats): the CPU seconds used between them over
// the time between them, 100% being one CPU, as `docker stats` counts it. Used by the CLI's `stats` and the
// dashboard.

type Read = { at: number; cpuSeconds: number | null };

/** Null without an earlier read, or when either read has no CPU figure (a stopped VM, msb). */
export function cpuPercentBetween(before: Read | undefined, now: Read): number | null {
  const seconds = before ? (now.at - before.at) / 1000 : 0;
  if (!before || before.cpuSeconds === null || now.cpuSeconds === null || seconds <= 0) return null;
  return (Math.max(0, now.cpuSeconds - before.cpuSeconds) / seconds) * 100;
}
