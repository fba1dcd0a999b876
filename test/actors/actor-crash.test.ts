// Actor failure: when a session actor's Worker dies, its pending calls fail at once (closed, with a
// reason), and a new actor rediscovers the VM from the runtime.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { RuntimeFailedError } from "../../sdk/index";
import { eventually, makeActorFixture, type ActorFixture } from "./fixture";

let f: ActorFixture;
let repo: string;
beforeAll(async () => {
  f = await makeActorFixture();
  repo = f.makeRepo();
  await f.client.sessions.register({ id: "ses_c", directory: repo });
}, 600_000);
afterAll(async () => f?.teardown(), 120_000);

describe("actor crash", () => {
  test("the Worker dies mid-command → the call fails at once; a new actor adopts the running VM", async () => {
    await f.client.run("ses_c", { command: "echo survived > /tmp/marker", cwd: repo });
    const vmName = (await f.client.sandbox.get("ses_c")).vmName;
    const events = f.client.exec("ses_c", { command: "echo go; sleep 600", cwd: repo, timeoutMs: 600_000 });
    for await (const event of events) {
      if (event.type !== "stdout") continue;
      const started = Date.now();
      f.supervisor.killActor(vmName);
      const error = await events.next().catch((e) => e);
      expect(error).toBeInstanceOf(RuntimeFailedError);
      expect(error.message).toContain("session actor");
      expect(Date.now() - started).toBeLessThan(5_000); // at once, not after the command's timeout
      break;
    }
    await eventually(async () => (await f.client.vms.list()).vms.some((vm) => vm.name === vmName && vm.status === "running"));
    expect((await f.client.run("ses_c", { command: "cat /tmp/marker", cwd: repo })).stdout).toBe("survived\n");
  });

  test("the Worker dies during a removal → DELETE /api/vms/:name answers 503 with the reason; a retry removes it", async () => {
    await f.client.run("ses_c", { command: "true", cwd: repo });
    const vmName = (await f.client.sandbox.get("ses_c")).vmName;
    const removal = f.request("DELETE", `/api/vms/${vmName}`);
    f.supervisor.killActor(vmName);
    const res = await removal;
    expect(res.status).toBe(503);
    expect(((await res.json()) as { code: string }).code).toBe("RUNTIME_FAILED");
    await eventually(async () => (await f.request("DELETE", `/api/vms/${vmName}`)).status !== 503);
    await eventually(async () => (await f.driver.inspect(vmName)) === undefined);
  });
});
