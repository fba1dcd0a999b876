// Forwarded ports over the real local runtime: a dev server in the VM (HTTP and a WebSocket, in Node)
// reached from the host — by fetch, and by a real headless Chromium loading its page — with no network for
// the VM at all (a forward is inbound only); forwards close with their VM; refusals say why.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PortNotForwardedError, PortUnavailableError, VmNotRunningError } from "../../sdk/index";
import { openBrowser } from "../ui/browser";
import { eventually, makeActorFixture, recordEvents, type ActorFixture } from "./fixture";

const DEV_SERVER = readFileSync(join(import.meta.dir, "fixtures/dev-server.mjs"), "utf8");

let f: ActorFixture;
let repo: string;
beforeAll(async () => {
  f = await makeActorFixture();
  repo = f.makeRepo("ports");
  await f.client.sessions.register({ id: "ses_ports", directory: repo });
  await f.client.sessions.register({ id: "ses_ports_child", parentID: "ses_ports", directory: repo });
  // No network at all: a forward still reaches the VM, because it comes in.
  await f.client.sandbox.set("ses_ports", { network: { mode: "none" } });
}, 600_000);
afterAll(async () => f?.teardown(), 120_000);

/** Starts the dev server in the background in the VM and waits until it listens. */
async function startDevServer(port: number): Promise<void> {
  await f.client.files.write("ses_ports", "/home/agent/dev-server.mjs", DEV_SERVER);
  const started = await f.client.run("ses_ports", { command: `node /home/agent/dev-server.mjs ${port} >/tmp/dev-server.log 2>&1 & for i in $(seq 100); do grep -q listening /tmp/dev-server.log && exit 0; sleep 0.05; done; cat /tmp/dev-server.log; exit 1`, cwd: repo });
  expect(started.exitCode).toBe(0);
}

describe("port forwards", () => {
  test("a dev server in a VM without network → forwarded to host loopback; fetch gets its page, many requests at once", async () => {
    await startDevServer(8000);
    const recorded = recordEvents(f);
    const forward = await f.client.ports.open("ses_ports", { port: 8000 });
    expect(forward).toMatchObject({ port: 8000, url: `http://127.0.0.1:${forward.hostPort}/` });
    const page = await fetch(forward.url);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<title>dev server in the VM</title>");
    const bodies = await Promise.all(Array.from({ length: 8 }, (_, i) => fetch(`${forward.url}echo/${i}`).then((r) => r.text())));
    expect(bodies).toEqual(Array.from({ length: 8 }, (_, i) => `/echo/${i}`));
    // A child session sees its root's forwards.
    expect((await f.client.ports.list("ses_ports_child")).ports.map((p) => p.port)).toEqual([8000]);
    await eventually(() => recorded.events.some((e) => e.type === "port" && e.phase === "opened" && e.port === 8000));
    recorded.stop();
    // Inbound only: inside the VM the host's port is nobody's (the guest's own loopback), and there is no other way out.
    const fromGuest = await f.client.run("ses_ports", { command: `socat -u /dev/null TCP4:127.0.0.1:${forward.hostPort} 2>&1; echo "exit $?"`, cwd: repo });
    expect(fromGuest.stdout).toMatch(/Connection refused[\s\S]*exit 1/);
    // The relays are not commands of the session's: none is in its history.
    expect((await f.client.execs.list("ses_ports", { limit: 200 })).execs.some((e) => e.command.includes("port 8000"))).toBe(false);
  });

  test("headless Chromium → loads the page and exchanges a WebSocket message with the server in the VM", async () => {
    const { url } = (await f.client.ports.list("ses_ports")).ports[0]!;
    const browser = await openBrowser();
    try {
      await browser.page.goto(url);
      await browser.page.waitForSelector("#ws[data-state=done]", { timeout: 15_000 });
      expect(await browser.page.textContent("#ws")).toBe("echo: hello from the browser");
    } finally {
      await browser.close();
    }
  });

  test("a port nothing listens on → a browser gets a 502 saying so; the same port twice, a taken host port, a VM not running → 409; closing one that is not open → 404", async () => {
    const nothing = await f.client.ports.open("ses_ports", { port: 8999 });
    const answer = await fetch(nothing.url);
    expect(answer.status).toBe(502);
    expect(await answer.text()).toContain("nothing listens on port 8999 in the VM");
    expect(await f.client.ports.open("ses_ports", { port: 8999 }).catch((e: unknown) => e)).toBeInstanceOf(PortUnavailableError);
    const taken = (await f.client.ports.list("ses_ports")).ports[0]!.hostPort;
    const clash = await f.client.ports.open("ses_ports", { port: 8001, hostPort: taken }).catch((e: unknown) => e);
    expect(clash).toBeInstanceOf(PortUnavailableError);
    expect((clash as Error).message).toContain(String(taken));
    await f.client.ports.close("ses_ports", 8999);
    expect(await f.client.ports.close("ses_ports", 8999).catch((e: unknown) => e)).toBeInstanceOf(PortNotForwardedError);
    await f.client.sessions.register({ id: "ses_cold", directory: repo });
    expect(await f.client.ports.open("ses_cold", { port: 8000 }).catch((e: unknown) => e)).toBeInstanceOf(VmNotRunningError);
  });

  test("toggle off → the forward closes with its VM (an event says why); the host port refuses connections", async () => {
    const { url, hostPort } = (await f.client.ports.list("ses_ports")).ports[0]!;
    const recorded = recordEvents(f);
    await f.client.sandbox.set("ses_ports", { sandboxed: false });
    await eventually(() => recorded.events.some((e) => e.type === "port" && e.phase === "closed" && e.reason === "vm-stopped" && e.hostPort === hostPort));
    recorded.stop();
    expect((await f.client.ports.list("ses_ports")).ports).toEqual([]);
    expect(await fetch(url).catch((e: unknown) => e)).toBeInstanceOf(Error);
  });

  test("delete → a forward opened again after toggle-on closes with the session's VM", async () => {
    await f.client.sandbox.set("ses_ports", { sandboxed: true });
    await startDevServer(8000);
    const { url } = await f.client.ports.open("ses_ports", { port: 8000 });
    expect((await fetch(url)).status).toBe(200);
    await f.client.sessions.delete("ses_ports");
    await eventually(async () => (await fetch(url).catch(() => "refused")) === "refused");
  });
});
