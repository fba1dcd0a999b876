// The exec API end to end over the real local runtime: VM per root, child sharing, isolation between
// roots, the command byte for byte, not-sandboxed refusals, cwd rules, spec change, toggles, deletes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { NotSandboxedError, CwdOutsideMountsError } from "../../sdk/index";
import { eventually, makeActorFixture, recordEvents, type ActorFixture } from "./fixture";

let f: ActorFixture;
let repoA: string;
let repoB: string;
beforeAll(async () => {
  f = await makeActorFixture();
  repoA = f.makeRepo("alpha");
  repoB = f.makeRepo("beta");
  await f.client.sessions.register({ id: "ses_a", directory: repoA });
  await f.client.sessions.register({ id: "ses_a_child", parentID: "ses_a", directory: repoA });
  await f.client.sessions.register({ id: "ses_b", directory: repoB });
}, 600_000);
afterAll(async () => f?.teardown(), 120_000);

const run = (id: string, command: string, cwd: string, extra: { env?: Record<string, string>; timeoutMs?: number } = {}) =>
  f.client.run(id, { command, cwd, ...extra });

describe("exec API", () => {
  test("first command → creates the root's VM; the repository is at the same path", async () => {
    expect((await f.client.vms.list()).vms).toEqual([]);
    const result = await run("ses_a", "pwd; cat README.md; hostname", repoA);
    expect(result).toMatchObject({ exitCode: 0, stdout: `${repoA}\n# alpha\n${result.vmName}\n` });
    const vms = (await f.client.vms.list()).vms;
    expect(vms.map((vm) => [vm.name, vm.rootSessionID, vm.status])).toEqual([[(await f.client.sandbox.get("ses_a")).vmName, "ses_a", "running"]]);
  });

  test("a child session → runs in its root's VM", async () => {
    await run("ses_a", "echo from-root > /tmp/marker", repoA);
    const child = await run("ses_a_child", "cat /tmp/marker", repoA);
    expect(child.stdout).toBe("from-root\n");
    expect(child.vmName).toBe((await f.client.sandbox.get("ses_a")).vmName);
  });

  test("two roots → two VMs that cannot see each other's repositories", async () => {
    const b = await run("ses_b", `ls ${repoA} 2>&1; echo exit=$?`, repoB);
    expect(b.vmName).not.toBe((await f.client.sandbox.get("ses_a")).vmName);
    expect(b.stdout).toMatch(/No such file or directory[\s\S]*exit=2/);
    const a = await run("ses_a", `cat ${repoB}/README.md 2>&1; echo exit=$?`, repoA);
    expect(a.stdout).not.toContain("# beta");
  });

  test("the command → reaches the VM byte for byte, as one argument to sh -c", async () => {
    // Not String.raw: Bun transpiles non-ASCII inside String.raw into \u escapes.
    const command = "printf '%s|' \"$0\" 'a  b' \"$HOME\" \"q\\\"uo'te\" '$NOT_EXPANDED' \"é漢字🙂\" && printf '\\n%s' 'line\ntwo' && echo ${#PWD}";
    const result = await run("ses_a", command, repoA);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe(`sh|a  b|/home/agent|q"uo'te|$NOT_EXPANDED|é漢字🙂|\nline\ntwo${repoA.length}\n`);
    const exact = await run("ses_a", "cat /proc/$$/cmdline | tr '\\0' '\\n'", repoA);
    expect(exact.stdout).toBe(`sh\n-c\ncat /proc/$$/cmdline | tr '\\0' '\\n'\n`);
  });

  test("stdin → as a base64 field, or streamed after the request's JSON line; the SDK picks the form by size (5 MiB through sha256sum)", async () => {
    const inline = await f.request("POST", "/api/sessions/ses_a/exec", {
      body: JSON.stringify({ command: "cat; echo", cwd: repoA, stdin: Buffer.from("from json").toString("base64") }),
      headers: { accept: "text/plain" },
    });
    expect((await inline.text()).split("\n")[0]).toBe("from json");
    const streamed = await f.request("POST", "/api/sessions/ses_a/exec", {
      body: `${JSON.stringify({ command: "wc -c", cwd: repoA })}\n${"x".repeat(100_000)}`,
      headers: { "content-type": "application/vnd.session-sandbox.exec-stdin", accept: "text/plain" },
    });
    expect((await streamed.text()).trim().split("\n")[0]).toBe("100000");
    // The SDK: small input inline, large input streamed; both arrive whole.
    expect((await f.client.run("ses_a", { command: "cat", cwd: repoA, stdin: "typed\n" })).stdout).toBe("typed\n");
    const large = new Uint8Array(5 * 1024 * 1024).map((_, i) => i % 251);
    const hashed = await f.client.run("ses_a", { command: "sha256sum", cwd: repoA, stdin: large });
    expect(hashed.stdout.split(" ")[0]).toBe(new Bun.CryptoHasher("sha256").update(large).digest("hex"));
  });

  test("stdin that is not base64, a streamed body with a stdin field or no JSON line, another content type → 4xx with the reason; nothing runs", async () => {
    const before = (await f.client.execs.list("ses_a")).execs.length;
    const notBase64 = await f.request("POST", "/api/sessions/ses_a/exec", { body: JSON.stringify({ command: "cat", stdin: "not base64!" }) });
    expect(notBase64.status).toBe(422); // the schema's answer, as for every other field
    expect(await notBase64.text()).toContain("stdin");
    const streamedType = { "content-type": "application/vnd.session-sandbox.exec-stdin" };
    const both = await f.request("POST", "/api/sessions/ses_a/exec", { body: `${JSON.stringify({ command: "cat", stdin: "aGk=" })}\nhi`, headers: streamedType });
    expect(both.status).toBe(400);
    expect(((await both.json()) as { message: string }).message).toContain('not a "stdin" field');
    const noLine = await f.request("POST", "/api/sessions/ses_a/exec", { body: JSON.stringify({ command: "cat" }), headers: streamedType });
    expect(noLine.status).toBe(400);
    expect(await noLine.text()).toContain("before the newline");
    const other = await f.request("POST", "/api/sessions/ses_a/exec", { body: "cat", headers: { "content-type": "text/plain" } });
    expect(other.status).toBe(415);
    expect(await other.text()).toContain("application/vnd.session-sandbox.exec-stdin");
    expect((await f.client.execs.list("ses_a")).execs.length).toBe(before);
  });

  test("a command killed at the VM's memory limit → oomKilled in its exit, history, exec event and metric; its stderr names the limit and the fix", async () => {
    await f.client.sessions.register({ id: "ses_oom", directory: repoB });
    await f.client.sandbox.set("ses_oom", { resources: { memoryMib: 256 } });
    const recorded = recordEvents(f);
    try {
      const killed = await f.client.run("ses_oom", { command: "python3 -c \"b = b'x' * (512 * 1024 * 1024); print('survived')\"", cwd: repoB });
      expect(killed).toMatchObject({ exitCode: 137, oomKilled: true });
      expect(killed.stdout).not.toContain("survived");
      expect(killed.stderr).toContain("session-sandbox: killed by the VM's memory limit (256 MiB); raise it with `session-sandbox resources ses_oom --memory 512M`");
      const [entry] = (await f.client.execs.list("ses_oom", { limit: 1 })).execs;
      expect(entry).toMatchObject({ exitCode: 137, oomKilled: true });
      expect(entry!.outputTail).toContain("killed by the VM's memory limit");
      await eventually(() => recorded.events.some((e) => e.type === "exec" && e.phase === "finished" && e.rootSessionID === "ses_oom" && e.oomKilled));
      expect(await (await f.request("GET", "/metrics")).text()).toContain("sandbox_oom_kills_total 1");
      // A command that exits on its own, or by another SIGKILL, is not marked.
      expect(await f.client.run("ses_oom", { command: "kill -9 $$", cwd: repoB })).toMatchObject({ exitCode: 137, oomKilled: false });
    } finally {
      recorded.stop();
      await f.client.sessions.delete("ses_oom");
    }
  });

  test("exit codes, stderr, env and timeouts → reported as the guest's", async () => {
    expect(await run("ses_a", "echo oops >&2; exit 42", repoA)).toMatchObject({ exitCode: 42, stderr: "oops\n" });
    expect((await run("ses_a", 'echo "$GREETING"', repoA, { env: { GREETING: "hi there" } })).stdout).toBe("hi there\n");
    const slow = await run("ses_a", "sleep 30", repoA, { timeoutMs: 300 });
    expect(slow.timedOut).toBe(true);
  });

  test("a session whose sandbox is off → NOT_SANDBOXED, nothing runs", async () => {
    await f.client.sessions.register({ id: "ses_off", directory: repoA });
    await f.client.sandbox.set("ses_off", { sandboxed: false });
    const marker = join(repoA, "off-marker");
    const error = await run("ses_off", `touch ${marker}`, repoA).catch((e) => e);
    expect(error).toBeInstanceOf(NotSandboxedError);
    expect(error.message).toContain("never runs commands on the host");
    expect(await Bun.file(marker).exists()).toBe(false);
  });

  test("cwd outside the mounts, or escaping through a symlink → 400 with the mounts", async () => {
    const outside = await run("ses_a", "true", repoB).catch((e) => e);
    expect(outside).toBeInstanceOf(CwdOutsideMountsError);
    expect(outside.message).toContain(repoA);
    const link = join(repoA, "escape");
    symlinkSync(repoB, link);
    expect(await run("ses_a", "true", link).catch((e) => e)).toBeInstanceOf(CwdOutsideMountsError);
    mkdirSync(join(repoA, "sub"), { recursive: true });
    expect((await run("ses_a", "pwd", join(repoA, "sub"))).stdout).toBe(`${join(repoA, "sub")}\n`);
  });

  test("files the guest writes in the repository → owned by the repository's owner", async () => {
    await run("ses_a", "echo data > written-by-guest.txt", repoA);
    const stat = Bun.spawnSync(["stat", "-c", "%u:%g", join(repoA, "written-by-guest.txt")]).stdout.toString().trim();
    const owner = Bun.spawnSync(["stat", "-c", "%u:%g", repoA]).stdout.toString().trim();
    expect(stat).toBe(owner);
  });

  test("a resource change → the next command recreates the VM, keeping the data volume", async () => {
    await run("ses_a", "echo kept > ~/data.txt; echo gone > /tmp/scratch", repoA);
    const before = (await f.client.vms.list()).vms.find((vm) => vm.rootSessionID === "ses_a")!;
    await f.client.sandbox.set("ses_a", { resources: { memoryMib: 384 } });
    const after = await run("ses_a", "cat ~/data.txt; cat /tmp/scratch 2>/dev/null || echo no-scratch", repoA);
    expect(after.stdout).toBe("kept\nno-scratch\n");
    const vm = (await f.client.vms.list()).vms.find((v) => v.rootSessionID === "ses_a")!;
    expect(vm.spec?.memoryMib).toBe(384);
    expect(vm.spec?.tmpSizeMib).toBe(96);
    expect(vm.lastStopReason).toBe("spec-change");
    expect(vm.createdAt).not.toBe(before.createdAt);
  });

  test("a client that disconnects → its command is killed in the VM", async () => {
    const controller = new AbortController();
    const events = f.client.exec("ses_a", { command: "sleep 300 & echo $! > /tmp/bg.pid; echo started; wait", cwd: repoA }, controller.signal);
    for await (const event of events) if (event.type === "stdout") break;
    controller.abort();
    // PID 1's own `sleep infinity` also matches "sleep": check the background child by its pid.
    await eventually(async () => (await run("ses_a", "kill -0 $(cat /tmp/bg.pid) 2>/dev/null && echo alive || echo dead", repoA)).stdout === "dead\n");
  });

  test("toggle off → the PUT answers at once, the VM goes in the background; toggle on → a fresh VM", async () => {
    await run("ses_b", "echo old > ~/state.txt", repoB);
    const vmName = (await f.client.sandbox.get("ses_b")).vmName;
    const view = await f.client.sandbox.set("ses_b", { sandboxed: false });
    expect(view.sandboxed).toBe(false);
    // The answer came before the removal finished: the supervisor still tracks the VM.
    expect((await f.client.vms.list()).vms.find((vm) => vm.name === vmName)?.status).toMatch(/running|removing/);
    await eventually(async () => (await f.driver.inspect(vmName)) === undefined);
    expect(await f.driver.listVolumes!()).not.toContain(vmName);
    await f.client.sandbox.set("ses_b", { sandboxed: true });
    const fresh = await run("ses_b", "cat ~/state.txt 2>/dev/null || echo fresh", repoB);
    expect(fresh.stdout).toBe("fresh\n");
  });

  test("delete a root session → its VM and volume are removed", async () => {
    const repo = f.makeRepo("gamma");
    await f.client.sessions.register({ id: "ses_del", directory: repo });
    await f.client.sessions.register({ id: "ses_del_child", parentID: "ses_del", directory: repo });
    await run("ses_del_child", "echo x > ~/f", repo);
    const vmName = (await f.client.sandbox.get("ses_del")).vmName;
    expect(await f.driver.inspect(vmName)).toBeDefined();
    await f.client.sessions.delete("ses_del");
    await eventually(async () => (await f.driver.inspect(vmName)) === undefined && !(await f.client.vms.list()).vms.some((vm) => vm.name === vmName));
    expect(await f.driver.listVolumes!()).not.toContain(vmName);
  });

  test("a second command → runs while a long first one is still running in the same VM", async () => {
    const long = f.client.run("ses_a", { command: "sleep 2; echo long-done", cwd: repoA });
    const quick = await run("ses_a", "echo quick", repoA);
    expect(quick.stdout).toBe("quick\n");
    expect(((await f.client.vms.list()).vms.find((vm) => vm.rootSessionID === "ses_a")?.runningExecs ?? 0) >= 1).toBe(true);
    expect((await long).stdout).toBe("long-done\n");
  });

  test("a command that arrives during a removal → runs in a fresh VM", async () => {
    await run("ses_a", "echo old > ~/during-removal", repoA);
    const vmName = (await f.client.sandbox.get("ses_a")).vmName;
    const removal = f.client.vms.remove(vmName);
    // Send the command only once the actor has taken the removal (it is removing, or already done).
    await eventually(() => f.supervisor.list().find((vm) => vm.vmName === vmName)?.status !== "running");
    const after = await run("ses_a", "cat ~/during-removal 2>/dev/null || echo fresh", repoA);
    await removal;
    expect(after.stdout).toBe("fresh\n");
  });

  test("DELETE /api/vms/:name → removes the VM; GET /api/vms shows the fields", async () => {
    await run("ses_a", "true", repoA);
    const vm = (await f.client.vms.list()).vms.find((v) => v.rootSessionID === "ses_a")!;
    expect(vm).toMatchObject({ status: "running", runningExecs: 0, spec: { cpus: 2, memoryMib: 384, mounts: [repoA] } });
    expect(typeof vm.lastUsedAt).toBe("number");
    expect(await f.client.vms.remove(vm.name)).toEqual({ removed: vm.name });
    expect(await f.driver.inspect(vm.name)).toBeUndefined();
  });
});
