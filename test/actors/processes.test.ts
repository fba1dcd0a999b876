// Background commands and live output over the real local runtime: a background command answers at once
// and runs on, is listed, can be followed while it prints, and killed with its whole tree; a foreground
// command in progress can be followed too; the kept output is bounded.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ExecNotFoundError, type ProcessLogEvent } from "../../sdk/index";
import { eventually, makeActorFixture, type ActorFixture } from "./fixture";

let f: ActorFixture;
let repo: string;
beforeAll(async () => {
  f = await makeActorFixture();
  repo = f.makeRepo("processes");
  await f.client.sessions.register({ id: "ses_proc", directory: repo });
  await f.client.run("ses_proc", { command: "true", cwd: repo }); // the VM is up: timings below are the commands'
}, 600_000);
afterAll(async () => f?.teardown(), 120_000);

const decode = (event: ProcessLogEvent) => ("data" in event ? new TextDecoder().decode(event.data) : "");

describe("background processes", () => {
  test("background → 202 with its call id at once; listed; followed live while it prints; killed with its whole tree", async () => {
    const started = performance.now();
    const { callID, background } = await f.client.processes.start("ses_proc", { command: "sleep 4321 & for i in $(seq 1 100); do echo line $i; sleep 0.1; done", cwd: repo });
    expect(background).toBe(true);
    expect(performance.now() - started).toBeLessThan(5_000); // it did not wait for the 10 s the command takes
    const listed = (await f.client.processes.list("ses_proc")).processes.find((p) => p.callID === callID);
    expect(listed).toMatchObject({ background: true, sessionId: "ses_proc", command: expect.stringContaining("sleep 4321") });

    // Follow: lines arrive while it still runs.
    const abort = new AbortController();
    let seen = "";
    for await (const event of f.client.processes.logs("ses_proc", callID, { follow: true, signal: abort.signal })) {
      seen += decode(event);
      if (seen.includes("line 3\n")) break;
    }
    abort.abort();
    expect((await f.client.processes.list("ses_proc")).processes.some((p) => p.callID === callID)).toBe(true);

    const killed = await f.client.processes.kill("ses_proc", callID);
    expect(killed.execs[0]).toMatchObject({ cancelled: true });
    expect((await f.client.processes.list("ses_proc")).processes.some((p) => p.callID === callID)).toBe(false);
    // Its background child went with it.
    expect((await f.client.run("ses_proc", { command: "ps -eo args | grep -c '^sleep 4321' || true", cwd: repo })).stdout).toBe("0\n");
  });

  test("a foreground command in progress → its output followed live from another client, then its exit", async () => {
    const running = f.client.run("ses_proc", { command: "for i in 1 2 3 4 5; do echo step $i; sleep 0.2; done; exit 3", cwd: repo, callID: "call-fg" });
    await eventually(async () => (await f.client.processes.list("ses_proc")).processes.some((p) => p.callID === "call-fg"));
    const events: ProcessLogEvent[] = [];
    for await (const event of f.client.processes.logs("ses_proc", "call-fg", { follow: true })) events.push(event);
    expect(events.map(decode).join("")).toBe("step 1\nstep 2\nstep 3\nstep 4\nstep 5\n");
    expect(events.at(-1)).toMatchObject({ type: "exit", exitCode: 3 });
    expect((await running).exitCode).toBe(3);
  });

  test("a background command printing 3 MiB → its latest 1 MiB kept, the rest counted as dropped; a reader is told what it missed", async () => {
    const { callID } = await f.client.processes.start("ses_proc", { command: "head -c 3145728 /dev/zero | tr '\\\\0' x; sleep 30", cwd: repo });
    await eventually(async () => ((await f.client.processes.list("ses_proc")).processes.find((p) => p.callID === callID)?.outputBytes ?? 0) >= 3 * 1024 * 1024);
    const listed = (await f.client.processes.list("ses_proc")).processes.find((p) => p.callID === callID)!;
    expect(listed.droppedBytes).toBeGreaterThanOrEqual(2 * 1024 * 1024 - 65_536);
    let kept = 0;
    for await (const event of f.client.processes.logs("ses_proc", callID)) kept += "data" in event ? event.data.byteLength : 0;
    expect(kept).toBeLessThanOrEqual(1024 * 1024);
    expect(kept).toBeGreaterThan(900 * 1024);
    await f.client.processes.kill("ses_proc", callID);
  });

  test("background with stdin → 400; an unknown call id → 404 for logs and kill", async () => {
    const withStdin = await f.request("POST", "/api/sessions/ses_proc/exec", { body: JSON.stringify({ command: "cat", background: true, stdin: "aGk=" }) });
    expect(withStdin.status).toBe(400);
    expect(await withStdin.text()).toContain("takes no stdin");
    expect(await f.client.processes.kill("ses_proc", "no-such-call").catch((e: unknown) => e)).toBeInstanceOf(ExecNotFoundError);
    const logs = await f.client.processes.logs("ses_proc", "no-such-call").next().catch((e: unknown) => e);
    expect(logs).toBeInstanceOf(ExecNotFoundError);
  });
});
