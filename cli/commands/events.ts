// `session-sandbox events [-f] [--since ID]`: the manager's events (GET /api/events through the SDK's
// events()), one line each. Without -f it prints what the manager still buffers and ends; with -f it
// follows live ones (after --since ID when given), until Ctrl-C.
import { eventIdAt, type SandboxClient, type SandboxEvent } from "../../sdk/index";
import { terminalSafe } from "../terminal-safe";
import { executeCommand, expectPositionals } from "../frame";
import { isoTime } from "../format";
import type { Output } from "../output";
import { parseDurationMs } from "../parse";
import { untilInterrupted } from "../interrupt";

/** The smallest ULID: "since the beginning of what the manager buffers". */
const BEGINNING = "00000000000000000000000000";

const HELP = `usage: session-sandbox events [-f] [--since ID|DURATION] [--json]

Prints the manager's events, one per line: TIME ID TYPE and what happened (VMs booting, running, stopped,
removed and why; commands started and finished; images built or pulled; secrets substituted, by name;
sessions registered and deleted; what their agents do (busy, idle, retry, waiting on a question or a
permission); sandboxes toggled; settings changed). Without -f: the events the manager
still buffers (its last 10,000; after --since ID when given), then it ends. -f (--follow): live events
from now on (after --since ID when given: the buffered ones after it first), until Ctrl-C. --since also
takes a duration (10m, 2h): the buffered events of that last while. A gap (the buffer no longer reaches
back to an ID) or an overflow is said on stderr. --json: one JSON object per line.`;

type Published = Extract<SandboxEvent, { id: string }>;

/** What happened, in words: the part of a line after its time, id and type. */
function describeEvent(event: Published): string {
  switch (event.type) {
    case "vm":
      return `${event.vmName} ${event.status}${event.reason ? ` (${event.reason})` : ""}${event.rootSessionID ? ` session=${event.rootSessionID}` : ""}`;
    case "exec": {
      const ended = event.phase === "finished" ? (event.timedOut ? " timed out" : event.cancelled ? " cancelled" : event.exitCode === null ? " failed" : ` exit=${event.exitCode}${event.oomKilled ? " (memory limit)" : ""}`) : "";
      return `${event.phase}${ended} call=${event.callID ?? "-"} vm=${event.vmName} session=${event.rootSessionID}`;
    }
    case "image":
      return `${event.image} ${event.phase}${event.detail ? `: ${event.detail}` : ""}`;
    case "secret":
      return `${event.name} substituted for ${event.host} vm=${event.vmName} session=${event.rootSessionID}`;
    case "session":
      return event.phase === "registered" ? `${event.sessionID} registered root=${event.rootSessionID} dir=${event.directory}` : `${event.sessionID} deleted`;
    case "sandbox":
      return `${event.rootSessionID} ${event.sandboxed ? "on" : "off"}`;
    case "settings":
      return `changed: ${event.keys.join(", ")}`;
    case "activity":
      return event.released
        ? `${event.sessionID} ${event.state} no longer holds its VM (${event.released === "stale" ? "its plugin stopped reporting" : "held longer than maxHoldMinutes"}) root=${event.rootSessionID}`
        : `${event.sessionID} ${event.state}${event.attempt !== null ? ` attempt=${event.attempt}` : ""} root=${event.rootSessionID}`;
    case "port":
      return `${event.port} ${event.phase}${event.reason ? ` (${event.reason})` : ""} ${event.url} vm=${event.vmName} session=${event.rootSessionID}`;
  }
}

function eventLine(event: Published, out: Output): string {
  return `${isoTime(event.at)}  ${out.paint.dim(event.id)}  ${out.paint.cyan(event.type.padEnd(8))}  ${describeEvent(event)}`;
}

/** Where to start: an event id as given; a duration as the first id of that moment; without -f, the beginning. */
function sinceOf(since: string | undefined, follow: boolean, now = Date.now()): { since?: string; derived: boolean } {
  if (since === undefined) return follow ? { derived: false } : { since: BEGINNING, derived: true };
  if (/^\d+(\.\d+)?(ms|s|m|h|d|w)$/.test(since)) return { since: eventIdAt(now - parseDurationMs(since, "--since")), derived: true };
  return { since, derived: false };
}

function print(client: SandboxClient, options: { since?: string; derived: boolean; follow: boolean }, out: Output): Promise<void> {
  return untilInterrupted(async (interrupted) => {
    for await (const event of client.events(interrupted, { since: options.since, follow: options.follow })) {
      if (!("id" in event)) {
        // A start we chose (the beginning, or a moment) that the buffer does not reach is not a loss worth a warning.
        if (event.type === "replay-gap" && options.derived) continue;
        const line = `events: ${out.paint.yellow(event.type)} ${event.message}`;
        process.stderr.write(`${process.stderr.isTTY ? terminalSafe(line) : line}\n`);
        continue;
      }
      out.line(out.json ? JSON.stringify({ ...event, at: isoTime(event.at) }) : eventLine(event as Published, out));
    }
  });
}

export function run(argv: string[]): Promise<number> {
  const options = { follow: { type: "boolean", short: "f" }, since: { type: "string" } } as const;
  return executeCommand({ name: "events", help: HELP, options }, argv, async ({ positionals, values, out, client }) => {
    expectPositionals(positionals, []);
    const follow = Boolean(values.follow);
    await print(client, { ...sinceOf(values.since, follow), follow }, out);
  });
}
