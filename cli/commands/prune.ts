// `bun run prune [--older-than 7d] [--dry-run]`: remove idle VMs and their volumes, listing them first.
import type { SandboxClient } from "../../sdk/index";
import { executeCommand, expectPositionals, reportFailure } from "../frame";
import { EXIT } from "../errors";
import { formatDuration, timeCell } from "../format";
import { renderTable, type Output } from "../output";
import { parseDurationMs } from "../parse";

type Vm = Awaited<ReturnType<SandboxClient["vms"]["list"]>>["vms"][number];

function candidatesTable(names: string[], known: Map<string, Vm>, out: Output): string {
  const rows = names.map((name) => {
    const vm = known.get(name);
    return [out.paint.cyan(name), vm?.rootSessionID ?? "-", vm?.status ?? "-", vm ? timeCell(vm.lastUsedAt, out) : "-"];
  });
  return renderTable([{ header: "NAME" }, { header: "SESSION" }, { header: "STATUS" }, { header: "LAST USED" }], rows, out.paint);
}

async function thresholdText(client: SandboxClient, idleForMs: number | undefined): Promise<string> {
  if (idleForMs !== undefined) return idleForMs === 0 ? "every idle VM" : `idle for at least ${formatDuration(idleForMs)}`;
  const { idleStopMinutes, execTimeoutMs } = await client.settings.get();
  return `idle for at least ${formatDuration(Math.max(idleStopMinutes * 60_000, execTimeoutMs))} (the sweep's threshold: max(idleStopMinutes, execTimeoutMs))`;
}

/** Listed VMs the sweep did not remove: fine if used again since, a failure if still idle and present. */
function stuck(listed: string[], removed: string[], before: Map<string, Vm>, after: Vm[]): string[] {
  return listed.filter((name) => {
    if (removed.includes(name)) return false;
    const now = after.find((vm) => vm.name === name);
    return now !== undefined && now.runningExecs === 0 && now.lastUsedAt === before.get(name)?.lastUsedAt;
  });
}

/** The sweep re-checks idleness, so what it removed can differ from the list: say how. */
function printOutcome(out: Output, listed: string[], removed: string[], failed: string[]): void {
  out.line(removed.length === 1 ? "removed 1 VM and its data volume" : `removed ${removed.length} VMs and their data volumes`);
  const extra = removed.filter((name) => !listed.includes(name));
  if (extra.length > 0) out.line(`also removed (became idle meanwhile): ${extra.join(", ")}`);
  const kept = listed.filter((name) => !removed.includes(name) && !failed.includes(name));
  if (kept.length > 0) out.line(`kept (in use again): ${kept.join(", ")}`);
}

export function run(argv: string[]): Promise<number> {
  return executeCommand(
    {
      name: "prune",
      help: `usage: bun run prune [--older-than DURATION] [--dry-run] [--json]

Removes every VM idle (no command running or waiting) for at least DURATION, with its data volume,
after listing them. DURATION like 30m, 2h, 7d, or 0 for every idle VM; without it, the manager's own
sweep threshold, max(idleStopMinutes, execTimeoutMs). --dry-run only lists. Orphaned runtime state
(half-created VMs, stray volumes) is cleaned by the manager at startup and by its sweep.`,
      options: { "older-than": { type: "string" }, "dry-run": { type: "boolean" } },
    },
    argv,
    async ({ positionals, values, out, client }) => {
      expectPositionals(positionals, []);
      const idleForMs = values["older-than"] === undefined ? undefined : parseDurationMs(values["older-than"], "--older-than");
      const dryRun = Boolean(values["dry-run"]);
      const plan = await client.vms.sweep({ idleForMs, dryRun: true });
      const before = new Map((await client.vms.list()).vms.map((vm) => [vm.name, vm] as const));
      const listed = plan.removed.toSorted();
      if (!out.json) {
        out.line(`${listed.length === 0 ? "nothing to prune" : `${dryRun ? "would remove" : "removing"} ${listed.length} VM${listed.length === 1 ? "" : "s"}`}: ${await thresholdText(client, idleForMs)}`);
        if (listed.length > 0) out.line(candidatesTable(listed, before, out));
      }
      if (dryRun || listed.length === 0) {
        if (out.json) out.printJson({ dryRun, idleForMs: idleForMs ?? null, wouldRemove: listed, removed: [], failed: [] });
        else if (dryRun && listed.length > 0) out.line(out.paint.dim("dry run: nothing was removed"));
        return;
      }
      const removed = (await client.vms.sweep({ idleForMs })).removed.toSorted();
      const failed = stuck(listed, removed, before, (await client.vms.list()).vms);
      if (out.json) out.printJson({ dryRun, idleForMs: idleForMs ?? null, wouldRemove: listed, removed, failed });
      else printOutcome(out, listed, removed, failed);
      if (failed.length > 0) {
        // The result above already went to stdout (with --json, including `failed`); only the reason is left to say.
        reportFailure("prune", { exitCode: EXIT.failed, code: "PRUNE_INCOMPLETE", message: `could not remove ${failed.join(", ")}`, fix: "see the manager's log (\"sweep could not remove a VM\"), then `bun run rm <vm>`" });
        return EXIT.failed;
      }
    },
  );
}
