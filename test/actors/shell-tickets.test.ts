// The shell WebSocket opened the way a browser must, without an Authorization header: with a single-use
// ticket asked for with the token. Over real HTTP and the real local runtime.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { websocket } from "elysia/ws";
import { TEST_TOKEN } from "../helpers";
import { makeActorFixture, type ActorFixture } from "./fixture";

let f: ActorFixture;
let server: ReturnType<typeof Bun.serve>;
let base: string;

beforeAll(async () => {
  f = await makeActorFixture();
  await f.client.sessions.register({ id: "ses_ticket", directory: f.makeRepo("ticket") });
  await f.client.sessions.register({ id: "ses_other", directory: f.makeRepo("other") });
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: f.app.fetch, websocket: websocket as unknown as Bun.WebSocketHandler<never> });
  f.app.server = server;
  base = `127.0.0.1:${server.port}`;
}, 600_000);
afterAll(async () => {
  server?.stop(true);
  await f?.teardown();
}, 120_000);

async function ticketFor(session: string): Promise<string> {
  const response = await fetch(`http://${base}/api/sessions/${session}/shell/tickets`, { method: "POST", headers: { authorization: `Bearer ${TEST_TOKEN}` } });
  expect(response.status).toBe(201);
  return ((await response.json()) as { ticket: string }).ticket;
}

/** Opens the socket as a browser does (no headers); resolves what the shell printed, or "refused". */
function browserShell(session: string, ticket: string, typed: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = new WebSocket(`ws://${base}/api/sessions/${session}/shell?ticket=${encodeURIComponent(ticket)}&rows=24&cols=80`);
    socket.binaryType = "arraybuffer";
    let text = "";
    let opened = false;
    socket.onopen = () => (opened = true);
    socket.onmessage = (event) => {
      if (typeof event.data === "string") {
        if ((JSON.parse(event.data) as { type: string }).type === "started") socket.send(new TextEncoder().encode(typed));
        return;
      }
      text += new TextDecoder().decode(event.data as ArrayBuffer);
      if (text.includes("TICKET-2")) socket.close(); // the output, not the echo of what was typed
    };
    socket.onclose = () => resolve(opened ? text : "refused");
  });
}

describe("shell tickets", () => {
  test("a ticket → the shell opens without the token in the URL; the same ticket again, or on another session → refused", async () => {
    const ticket = await ticketFor("ses_ticket");
    const vmName = (await f.client.sandbox.get("ses_ticket")).vmName;
    expect(await browserShell("ses_ticket", ticket, "hostname; echo TICKET-$((1+1))\n")).toContain(vmName);
    expect(await browserShell("ses_ticket", ticket, "hostname\n")).toBe("refused");
    const other = await ticketFor("ses_ticket");
    expect(await browserShell("ses_other", other, "hostname\n")).toBe("refused");
    // Without a ticket and without a token: refused, with the reason.
    const bare = await fetch(`http://${base}/api/sessions/ses_ticket/shell?ticket=nope`);
    expect(bare.status).toBe(401);
    expect(await bare.text()).toContain("shell ticket is unknown, already used, expired or for another session");
  });
});
