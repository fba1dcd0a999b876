// The real manager process over real HTTP on port 0, driven through the SDK.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { createClient, ManagerUnreachableError, ResourceOutOfRangeError, SessionNotFoundError, UnauthorizedError, ValidationFailedError } from "../sdk/index";
import { makeTempDir } from "./helpers";
import { startManager, type ManagerProcess } from "./manager-process";

let manager: ManagerProcess;
let dataDir: string;
beforeAll(async () => {
  dataDir = makeTempDir("ss-http-");
  manager = await startManager(dataDir);
});
afterAll(async () => {
  await manager.stop();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(`${dataDir}-runtime`, { recursive: true, force: true });
});

describe("real HTTP", () => {
  test("health → 200 without a token", async () => {
    const res = await fetch(`${manager.url}/api/health`);
    expect(res.status).toBe(200);
    const health = (await res.json()) as { status: string; runtime: { name: string | null; reason: string; notUsed: Record<string, string> } };
    expect(health.status).toBe("ok");
    // Whichever runtime this machine has, health says which and why the other is not used.
    expect(health.runtime.reason.length).toBeGreaterThan(10);
    expect(Object.keys(health.runtime.notUsed).length).toBeGreaterThan(0);
  });

  test("SDK round trip: register, toggle, resize, read back", async () => {
    const client = createClient({ url: manager.url, token: manager.token });
    expect(await client.sessions.register({ id: "ses_http", directory: "/repo" })).toMatchObject({ rootSessionID: "ses_http" });
    await client.sandbox.set("ses_http", { sandboxed: false, resources: { cpus: 1, memoryMib: 256 } });
    expect(await client.sandbox.get("ses_http")).toMatchObject({ sandboxed: false, source: "explicit", resources: { effective: { cpus: 1, memoryMib: 256 } } });
  });

  test("SDK failures → typed errors with the server's reason", async () => {
    const client = createClient({ url: manager.url, token: manager.token });
    const notFound = await client.sandbox.get("ses_missing").catch((e) => e);
    expect(notFound).toBeInstanceOf(SessionNotFoundError);
    expect(notFound.status).toBe(404);
    const tooBig = await client.sandbox.set("ses_http", { resources: { cpus: 4096 } }).catch((e) => e);
    expect(tooBig).toBeInstanceOf(ResourceOutOfRangeError);
    expect(tooBig.message).toContain("host's");
    const invalid = await client.sandbox.set("ses_http", { resources: { cpus: 1.5 } }).catch((e) => e);
    expect(invalid).toBeInstanceOf(ValidationFailedError);
    const wrongToken = await createClient({ url: manager.url, token: "nope" }).settings.get().catch((e) => e);
    expect(wrongToken).toBeInstanceOf(UnauthorizedError);
  });

  test("a body over 1 MiB, sent chunked without a length → 413", async () => {
    const chunk = new TextEncoder().encode(" ".repeat(64 * 1024));
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 20) return controller.close();
        sent += 1;
        controller.enqueue(chunk);
      },
    });
    const res = await fetch(`${manager.url}/api/settings/sandbox`, {
      method: "PATCH",
      body,
      headers: { authorization: `Bearer ${manager.token}`, "content-type": "application/json" },
    });
    expect(res.status).toBe(413);
  });

  test("a manager that is not there → ManagerUnreachableError", async () => {
    const server = Bun.serve({ port: 0, fetch: () => new Response("") });
    const deadUrl = `http://127.0.0.1:${server.port}`;
    await server.stop(true);
    const error = await createClient({ url: deadUrl, token: "x" }).health().catch((e) => e);
    expect(error).toBeInstanceOf(ManagerUnreachableError);
    expect(error.message).toContain(deadUrl);
  });

  test("the token never appears in the manager's log", () => {
    expect(manager.stderrLines.join("\n")).not.toContain(manager.token);
  });
});
