// `session-sandbox ports <session>` and `session-sandbox port-forward <session> [HOST:]PORT`: ports of a
// session's VM forwarded to the manager's host (POST/GET/DELETE /api/sessions/:id/ports). As with
// `kubectl port-forward` and `docker run -p`, the host side comes first: `8000` forwards VM port 8000 to
// host port 8000, `9000:8000` to 9000, `:8000` to a free one. The forward lives in the manager (this
// command ends at once) until --close, or until the VM stops.
import type { SandboxClient } from "../../sdk/index";
import { UsageError } from "../errors";
import { executeCommand, expectPositionals } from "../frame";
import { renderTable, type Output } from "../output";

const LIST_HELP = `usage: bun run ports <session> [--json]
       bun run ports <session> --close PORT [--json]

The ports of the session's VM that are forwarded to this host (see port-forward), with their URLs; --close
ends one (its listener and its connections). A forward also ends when its VM stops.`;

const FORWARD_HELP = `usage: bun run port-forward <session> [HOST_PORT:]PORT [--json]

Forwards PORT of the session's VM (a dev server started there, e.g. \`npm run dev\`) to the manager's host and
prints its URL: \`8000\` to host port 8000, \`9000:8000\` to 9000, \`:8000\` to a free port. TCP: HTTP,
WebSockets, HMR and SSE alike. It listens on 127.0.0.1 unless the manager was started with
SANDBOX_FORWARD_HOST, and is inbound only: the VM's network policy is unchanged. It lasts until
\`session-sandbox ports <session> --close PORT\` or until the VM stops.`;

type Forward = Awaited<ReturnType<SandboxClient["ports"]["open"]>>;

function portNumber(text: string, what: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port < 1 || port > 65535) throw new UsageError(`${what} ${JSON.stringify(text)} is not a port (1-65535)`, "e.g. port-forward ses_1 8000, or 9000:8000 for host port 9000");
  return port;
}

/** `[HOST_PORT:]PORT`: docker's and kubectl's order, host first. */
export function parseForward(spec: string): { port: number; hostPort?: number } {
  const colon = spec.lastIndexOf(":");
  if (colon < 0) return { port: portNumber(spec, "PORT"), hostPort: portNumber(spec, "PORT") };
  const port = portNumber(spec.slice(colon + 1), "PORT");
  const host = spec.slice(0, colon);
  return host === "" ? { port } : { port, hostPort: portNumber(host, "HOST_PORT") };
}

function forwardsTable(forwards: Forward[], out: Output): string {
  if (forwards.length === 0) return out.paint.dim("(no forwarded ports)");
  return renderTable(
    ["VM PORT", "URL", "CONNECTIONS", "OPENED"].map((header) => ({ header, align: "left" as const })),
    forwards.map((f) => [String(f.port), out.paint.cyan(f.url), String(f.connections), new Date(f.openedAt).toISOString()]),
    out.paint,
  );
}

export function run(argv: string[]): Promise<number> {
  return executeCommand({ name: "ports", help: LIST_HELP, options: { close: { type: "string" } } }, argv, async ({ positionals, values, client, out }) => {
    const [session] = expectPositionals(positionals, ["session"]) as [string];
    if (values.close !== undefined) {
      const closed = await client.ports.close(session, portNumber(values.close, "--close"));
      return out.json ? out.printJson({ closed }) : out.line(`closed the forward of VM port ${closed.port} (${closed.url})`);
    }
    const { ports } = await client.ports.list(session);
    out.json ? out.printJson({ ports }) : out.line(forwardsTable(ports, out));
  });
}

export function runForward(argv: string[]): Promise<number> {
  return executeCommand({ name: "port-forward", help: FORWARD_HELP, options: {} }, argv, async ({ positionals, client, out }) => {
    const [session, spec] = expectPositionals(positionals, ["session", "[HOST_PORT:]PORT"]) as [string, string];
    const forward = await client.ports.open(session, parseForward(spec));
    out.json ? out.printJson({ forward }) : out.line(`VM port ${forward.port} → ${out.paint.cyan(forward.url)} (until \`session-sandbox ports ${session} --close ${forward.port}\` or the VM stops)`);
  });
}
