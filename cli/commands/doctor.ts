// `bun run doctor`: the manager's own checks (GET /api/doctor), or — when it is down or with --local —
// the checks this host allows without it. Each problem with its fix; exit 1 when a required check fails.
import { ManagerUnreachableError, RouteNotFoundError, type SandboxClient } from "../../sdk/index";
import { executeCommand, expectPositionals } from "../frame";
import { EXIT, START_FIX, describeFailure } from "../errors";
import { localChecks, type Check } from "../doctor-local";
import { lineWidth, wrapWords, type Output } from "../output";

type Source = "manager" | "local";
type SourcedCheck = Check & { source: Source };

/** A manager without GET /api/doctor (older than these scripts): its health still says whether a runtime works. */
async function healthChecks(client: SandboxClient): Promise<Check[]> {
  const { runtime } = await client.health();
  return [
    runtime.available
      ? { name: "runtime in use", ok: true, required: true, detail: `${runtime.name} (${runtime.version})`, fix: null }
      : { name: "runtime in use", ok: false, required: true, detail: "none: sandboxed commands are refused", fix: runtime.reason },
  ];
}

/** The manager check first, then its report; `reported` is false when no report came (down, token refused). */
async function managerChecks(client: SandboxClient, url: string, tokenProblem: string | undefined): Promise<{ checks: Check[]; reported: boolean }> {
  try {
    const health = await client.health();
    const reached: Check = { name: "manager", ok: true, required: true, detail: `${url}: version ${health.version}`, fix: null };
    const report = await client.doctor().catch(async (error) => {
      if (error instanceof RouteNotFoundError) return { ok: false, checks: await healthChecks(client) };
      throw error;
    });
    return { checks: [reached, ...report.checks], reported: true };
  } catch (error) {
    const failure = describeFailure(error, { command: "doctor", tokenProblem });
    const down = error instanceof ManagerUnreachableError;
    return { checks: [{ name: "manager", ok: false, required: true, detail: down ? `not reachable at ${url}` : failure.message, fix: down ? START_FIX : failure.fix }], reported: false };
  }
}

/** The report as text; with `lineWidth`, details and fixes wrap at word boundaries under their column. */
function render(checks: SourcedCheck[], out: Output, lineWidth?: number): string {
  const width = Math.max(...checks.map((check) => check.name.length));
  const column = 2 + 4 + 2 + width + 2; // where details and fixes start
  // Continuations go under the text, unless that leaves a narrow terminal too little room: then under the name.
  const indent = lineWidth !== undefined && lineWidth - column < 40 ? 8 : column;
  const wrap = (text: string, lead = 0) => (lineWidth ? wrapWords(text, { width: lineWidth, firstWidth: lineWidth - column - lead, indent }) : text);
  const lines: string[] = [];
  let source: Source | undefined;
  for (const check of checks) {
    if (check.source !== source) {
      source = check.source;
      if (lines.length > 0) lines.push("");
      lines.push(out.paint.bold(source === "manager" ? "the manager (GET /api/doctor)" : "this host (without the API)"));
    }
    const status = check.ok ? out.paint.green("ok  ") : check.required ? out.paint.red("FAIL") : out.paint.yellow("warn");
    const optional = !check.ok && !check.required ? out.paint.dim(" (not required)") : "";
    lines.push(`  ${status}  ${check.name.padEnd(width)}  ${wrap(`${check.detail}${optional}`)}`);
    if (!check.ok && check.fix) lines.push(`  ${" ".repeat(4)}  ${" ".repeat(width)}  ${out.paint.bold("fix:")} ${wrap(check.fix, "fix: ".length)}`);
  }
  const failed = checks.filter((check) => !check.ok && check.required).length;
  lines.push("", failed === 0 ? out.paint.green("all required checks passed") : out.paint.red(`${failed} required check${failed === 1 ? "" : "s"} failed`));
  return lines.map((line) => line.replace(/ +$/gm, "")).join("\n");
}

export function run(argv: string[]): Promise<number> {
  return executeCommand(
    {
      name: "doctor",
      help: `usage: bun run doctor [--local] [--json]

Asks the manager (GET /api/doctor) about the runtime, KVM, msb, cgroups, the root filesystem, disk space,
the database and the token. When the manager is down (or refuses the token) it says so, with the fix, and checks what
this host allows without it: configuration, Bun, crun, /dev/kvm, the root filesystem, disk space and the
token. --local adds those host checks even when the manager answers. Exit 1 when a required check fails
(never 3: an unreachable manager is one of the failed checks).`,
      options: { local: { type: "boolean" } },
    },
    argv,
    async ({ positionals, values, out, client, connection }) => {
      expectPositionals(positionals, []);
      const manager = await managerChecks(client, connection.url, connection.tokenProblem);
      const checks: SourcedCheck[] = manager.checks.map((check) => ({ ...check, source: "manager" }));
      if (!manager.reported || values.local) checks.push(...localChecks(process.env).map((check) => ({ ...check, source: "local" as const })));
      const ok = checks.every((check) => check.ok || !check.required);
      if (out.json) {
        out.printJson({
          ok,
          url: connection.url,
          checks: checks.map(({ source, name, ok, required, detail, fix }) => ({ source, name, ok, required, detail, fix })),
        });
      } else out.line(render(checks, out, lineWidth(process.env, process.stdout)));
      return ok ? EXIT.ok : EXIT.failed;
    },
  );
}
