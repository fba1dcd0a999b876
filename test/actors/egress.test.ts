// Egress over the real local runtime: the guest's only way out is its host-side proxy (Unix socket +
// in-VM forwarder on 127.0.0.1:3128). Targets are loopback servers on the host; nothing else is contacted.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { eventually, makeActorFixture, type ActorFixture } from "./fixture";

let f: ActorFixture;
let repo: string;
let server: ReturnType<typeof Bun.serve>;
beforeAll(async () => {
  f = await makeActorFixture();
  repo = f.makeRepo();
  server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("hello-from-host") });
  await f.client.sessions.register({ id: "ses_net", directory: repo });
}, 600_000);
afterAll(async () => {
  server?.stop(true);
  await f?.teardown();
}, 120_000);

/** curl through the VM's proxy explicitly (NO_PROXY would send 127.0.0.1 straight to the guest's own loopback). */
const viaProxy = (url: string) => `curl -s -S --max-time 10 --noproxy '' -x "$HTTP_PROXY" -D - -o /tmp/body ${url}; echo "exit=$?"; cat /tmp/body`;

describe("egress", () => {
  test("network none (default) → no proxy in the guest, no way out", async () => {
    const result = await f.client.run("ses_net", { command: `echo "proxy=[$HTTP_PROXY]"; curl -s --max-time 5 http://127.0.0.1:${server.port}/; echo "exit=$?"`, cwd: repo });
    expect(result.stdout).toContain("proxy=[]");
    expect(result.stdout).toContain("exit=7"); // connection refused: the guest's loopback is its own
  });

  test("an allowed host → answers through the proxy", async () => {
    await f.client.sandbox.set("ses_net", { network: { mode: "allowlist", allow: ["loopback"] } });
    const result = await f.client.run("ses_net", { command: viaProxy(`http://127.0.0.1:${server.port}/`), cwd: repo });
    expect(result.stdout).toContain("HTTP/1.1 200");
    expect(result.stdout).toContain("hello-from-host");
    const tunnelled = await f.client.run("ses_net", { command: `curl -s --max-time 10 --noproxy '' -p -x "$HTTP_PROXY" http://127.0.0.1:${server.port}/`, cwd: repo });
    expect(tunnelled.stdout).toBe("hello-from-host"); // CONNECT tunnel
  });

  test("a denied host → 403 naming the rule", async () => {
    await f.client.sandbox.set("ses_net", { network: { mode: "allowlist", allow: ["api.github.com"] } });
    const result = await f.client.run("ses_net", { command: viaProxy(`http://127.0.0.1:${server.port}/`), cwd: repo });
    expect(result.stdout).toContain("HTTP/1.1 403");
    expect(result.stdout).toMatch(/x-sandbox-rule: block loopback/i);
    expect(result.stdout).toContain("denied");
  });

  test("a direct connection that bypasses the proxy → fails", async () => {
    await f.client.sandbox.set("ses_net", { network: { mode: "all" } });
    const result = await f.client.run("ses_net", { command: `curl -s --max-time 5 --noproxy '*' http://127.0.0.1:${server.port}/; echo "exit=$?"; ip -o link | awk '{print $2}'`, cwd: repo });
    expect(result.stdout).toContain("exit=7");
    expect(result.stdout.trim().endsWith("lo:")).toBe(true); // loopback is the only interface
  });

  test("the VM's removal → its proxy stops and its socket goes", async () => {
    const vmName = (await f.client.sandbox.get("ses_net")).vmName;
    const socket = f.egress.socketPathFor(vmName);
    expect(existsSync(socket)).toBe(true);
    await f.client.sessions.delete("ses_net");
    await eventually(() => !f.egress.running().includes(vmName) && !existsSync(socket));
  });
});
