// `vms`, `rm` and `prune` end to end: the real manager over the real local runtime, each script run as
// `bun run --silent <name>` in a child process, the table form snapshotted and the --json form parsed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { normalize, parseJson, startAdminManager, type AdminManager } from "./fixture";

type VmJson = {
  name: string;
  rootSessionID: string | null;
  status: string;
  cpus: number | null;
  memoryMib: number | null;
  tmpSizeMib: number | null;
  mounts: string[];
  image: string | null;
  createdAt: string | null;
  lastUsedAt: string;
  runningExecs: number;
  lastStopReason: string | null;
};
type PruneJson = { dryRun: boolean; idleForMs: number | null; wouldRemove: string[]; removed: string[]; failed: string[] };

let m: AdminManager;
let alpha: string;
let beta: string;
const vmOf = async (session: string) => (await m.client.sandbox.get(session)).vmName;
const volumes = () => {
  const dir = join(m.manager.runtimeDir, "local", "volumes");
  return existsSync(dir) ? readdirSync(dir) : [];
};

beforeAll(async () => {
  m = await startAdminManager({ vms: true });
  alpha = m.makeRepo("alpha");
  beta = m.makeRepo("beta");
  await m.client.sessions.register({ id: "ses_alpha", directory: alpha });
  await m.client.sessions.register({ id: "ses_beta", directory: beta });
  await m.client.sandbox.set("ses_beta", { resources: { cpus: 1, memoryMib: 512 } });
  for (const [session, cwd] of [["ses_alpha", alpha], ["ses_beta", beta]] as const) {
    expect(await m.client.run(session, { command: "true", cwd })).toMatchObject({ exitCode: 0 });
  }
}, 600_000);
afterAll(async () => m?.cleanup(), 120_000);

describe("bun run vms", () => {
  test("piped → a plain table, one row per VM, ISO times", async () => {
    const result = await m.run("vms");
    expect(result).toMatchObject({ exitCode: 0, stderr: "" });
    expect(result.stdout).not.toContain("\x1b[");
    expect(normalize(result.stdout)).toMatchInlineSnapshot(`
      "NAME                      SESSION    STATUS   EXECS  CPUS  MEMORY  CREATED               LAST USED             LAST STOP REASON
      ocm-session-XXXXXXXXXXXX  ses_alpha  running      0     2      2G  YYYY-MM-DDThh:mm:ssZ  YYYY-MM-DDThh:mm:ssZ  -
      ocm-session-XXXXXXXXXXXX  ses_beta   running      0     1    512M  YYYY-MM-DDThh:mm:ssZ  YYYY-MM-DDThh:mm:ssZ  -
      "
    `);
  });

  test("--json → stable keys, ISO 8601 times, the API's values", async () => {
    const { vms } = parseJson<{ vms: VmJson[] }>(await m.run("vms", ["--json"]));
    const api = (await m.client.vms.list()).vms;
    expect(vms.map((vm) => vm.name).toSorted()).toEqual(api.map((vm) => vm.name).toSorted());
    const beta = vms.find((vm) => vm.rootSessionID === "ses_beta")!;
    expect(Object.keys(beta)).toEqual(["name", "rootSessionID", "status", "cpus", "memoryMib", "tmpSizeMib", "mounts", "image", "createdAt", "lastUsedAt", "runningExecs", "lastStopReason"]);
    expect(beta).toMatchObject({ name: await vmOf("ses_beta"), status: "running", cpus: 1, memoryMib: 512, tmpSizeMib: 128, mounts: [m.reposDir + "/beta"], runningExecs: 0, lastStopReason: null });
    const apiBeta = api.find((vm) => vm.rootSessionID === "ses_beta")!;
    expect(beta.lastUsedAt).toBe(new Date(apiBeta.lastUsedAt).toISOString().replace(/\.\d{3}Z$/, "Z"));
    expect(beta.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  test("vms hides running execs → EXECS counts the commands running in each VM", async () => {
    const stop = new AbortController();
    const started = Promise.withResolvers<void>();
    const running = (async () => {
      for await (const event of m.client.exec("ses_alpha", { command: "sleep 30", cwd: alpha }, stop.signal)) if (event.type === "started") started.resolve();
    })().catch(() => undefined);
    await started.promise;
    const rows = (await m.run("vms")).stdout.split("\n");
    stop.abort();
    await running;
    const cells = (session: string) => rows.find((row) => row.includes(session))!.split(/\s{2,}/);
    expect(rows[0]!.split(/\s{2,}/).slice(0, 5)).toEqual(["NAME", "SESSION", "STATUS", "EXECS", "CPUS"]);
    expect(cells("ses_alpha").slice(1, 4)).toEqual(["ses_alpha", "running", "1"]);
    expect(cells("ses_beta").slice(1, 4)).toEqual(["ses_beta", "running", "0"]);
  });

  test("sessions has no sandbox/VM column → SANDBOX on or off, and the root's VM with its status", async () => {
    await m.client.sessions.register({ id: "ses_alpha_child", parentID: "ses_alpha", directory: alpha });
    await m.client.sessions.register({ id: "ses_gamma", directory: alpha });
    await m.client.sandbox.set("ses_gamma", { sandboxed: false });
    const result = await m.run("sessions");
    expect(result).toMatchObject({ exitCode: 0, stderr: "" });
    const rows = result.stdout.trimEnd().split("\n").map((row) => row.split(/\s{2,}/));
    expect(rows[0]).toEqual(["ID", "ROOT", "PARENT", "FORK OF", "SANDBOX", "ACTIVITY", "VM", "DIRECTORY", "CREATED"]);
    const alphaVm = `${await vmOf("ses_alpha")} (running)`;
    expect(rows.slice(1).map((row) => [row[0], row[4], row[6]])).toEqual([
      ["ses_alpha", "on", alphaVm],
      ["ses_beta", "on", `${await vmOf("ses_beta")} (running)`],
      ["ses_alpha_child", "on", alphaVm],
      ["ses_gamma", "off", "-"],
    ]);
    const { sessions } = parseJson<{ sessions: { id: string; sandboxed: boolean | null; vmName: string | null; vmStatus: string | null }[] }>(await m.run("sessions", ["--json"]));
    expect(sessions.find((s) => s.id === "ses_alpha_child")).toMatchObject({ sandboxed: true, vmName: await vmOf("ses_alpha"), vmStatus: "running" });
    expect(sessions.find((s) => s.id === "ses_gamma")).toMatchObject({ sandboxed: false, vmName: null, vmStatus: null });
    await m.client.sessions.delete("ses_gamma");
    await m.client.sessions.delete("ses_alpha_child");
  });

  test("on a terminal → colors and relative times; NO_COLOR → relative times without colors", async () => {
    // `script` gives the child a pseudo-terminal, as an operator's shell would.
    const onTty = async (extra: Record<string, string>) => {
      const proc = Bun.spawn(["script", "-qec", "bun run --silent vms", "/dev/null"], { cwd: join(import.meta.dir, "../.."), env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/root", TERM: "xterm", ...m.env, ...extra }, stdout: "pipe", stdin: "ignore" });
      const [text, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
      expect(code).toBe(0);
      return text;
    };
    const colored = await onTty({});
    expect(colored).toContain("\x1b[1mNAME");
    expect(colored).toContain("\x1b[32mrunning\x1b[39m");
    expect(colored).toMatch(/(just now|\d+s ago)/);
    expect(colored).not.toMatch(/\d{4}-\d\d-\d\dT/);
    const plain = await onTty({ NO_COLOR: "1" });
    expect(plain).not.toContain("\x1b[");
    expect(plain).toMatch(/(just now|\d+s ago)/);
  });
});

describe("bun run prune", () => {
  test("--dry-run → lists the idle VMs and changes nothing", async () => {
    const before = (await m.run("vms", ["--json"])).stdout;
    const volumesBefore = volumes();
    const result = await m.run("prune", ["--older-than", "0", "--dry-run"]);
    expect(result).toMatchObject({ exitCode: 0, stderr: "" });
    expect(normalize(result.stdout)).toMatchInlineSnapshot(`
      "would remove 2 VMs: every idle VM
      NAME                      SESSION    STATUS   LAST USED
      ocm-session-XXXXXXXXXXXX  ses_alpha  running  YYYY-MM-DDThh:mm:ssZ
      ocm-session-XXXXXXXXXXXX  ses_beta   running  YYYY-MM-DDThh:mm:ssZ
      dry run: nothing was removed
      "
    `);
    const json = parseJson<PruneJson>(await m.run("prune", ["--older-than", "0", "--dry-run", "--json"]));
    expect(json).toEqual({ dryRun: true, idleForMs: 0, wouldRemove: [await vmOf("ses_alpha"), await vmOf("ses_beta")].toSorted(), removed: [], failed: [] });
    expect((await m.run("vms", ["--json"])).stdout).toBe(before);
    expect(volumes()).toEqual(volumesBefore);
  });

  test("--older-than 7d → nothing is that old, nothing removed", async () => {
    const result = await m.run("prune", ["--older-than", "7d"]);
    expect(result).toMatchObject({ exitCode: 0, stdout: "nothing to prune: idle for at least 7d\n" });
    expect((await m.client.vms.list()).vms).toHaveLength(2);
  });

  test("a bad duration → exit 2 with the fix, nothing removed", async () => {
    const result = await m.run("prune", ["--older-than", "7"]);
    expect(result).toEqual({ exitCode: 2, stdout: "", stderr: 'prune: --older-than "7" is not a duration — fix: write it with a unit: 30m, 2h, 7d (or 0)\n' });
    expect((await m.client.vms.list()).vms).toHaveLength(2);
  });
});

describe("bun run rm", () => {
  test("rm <vm> → removes it and its data volume; the other stays", async () => {
    const name = await vmOf("ses_beta");
    expect(volumes()).toHaveLength(2);
    const result = await m.run("rm", [name]);
    expect(result).toEqual({ exitCode: 0, stdout: `removed ${name} and its data volume\n`, stderr: "" });
    const left = parseJson<{ vms: VmJson[] }>(await m.run("vms", ["--json"])).vms;
    expect(left.map((vm) => vm.rootSessionID)).toEqual(["ses_alpha"]);
    expect(volumes()).toHaveLength(1);
    // "Why did my sandbox stop": the session's view keeps the answer after the VM is gone.
    const view = parseJson<{ lastStop: { vmName: string; status: string; reason: string | null; at: string } | null }>(await m.run("sandbox", ["ses_beta", "--json"]));
    expect(view.lastStop).toEqual({ vmName: name, status: "removed", reason: "manual", at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/) });
    expect((await m.run("sandbox", ["ses_beta"])).stdout).toMatch(/\nLAST STOP  removed \(manual\) \d{4}-\d\d-\d\dT/);
  });

  test("rm of an unknown VM → exit 1, the manager's reason and the fix; --json → the error object", async () => {
    const result = await m.run("rm", ["ocm-session-000000000000"]);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toBe('rm: no VM named "ocm-session-000000000000"; list them with GET /api/vms — fix: list the VMs with `bun run vms`\n');
    const json = parseJson<{ error: { code: string; message: string; fix: string; exitCode: number } }>(await m.run("rm", ["ocm-session-000000000000", "--json"]));
    expect(json.error).toMatchObject({ code: "VM_NOT_FOUND", exitCode: 1, fix: "list the VMs with `bun run vms`" });
  });
});

describe("bun run prune (removing)", () => {
  test("--older-than 0 → lists, then removes every idle VM and its volume", async () => {
    const result = await m.run("prune", ["--older-than", "0"]);
    expect(result).toMatchObject({ exitCode: 0, stderr: "" });
    expect(normalize(result.stdout)).toMatchInlineSnapshot(`
      "removing 1 VM: every idle VM
      NAME                      SESSION    STATUS   LAST USED
      ocm-session-XXXXXXXXXXXX  ses_alpha  running  YYYY-MM-DDThh:mm:ssZ
      removed 1 VM and its data volume
      "
    `);
    expect(parseJson<{ vms: VmJson[] }>(await m.run("vms", ["--json"])).vms).toEqual([]);
    expect(volumes()).toEqual([]);
    const again = parseJson<PruneJson>(await m.run("prune", ["--older-than", "0", "--json"]));
    expect(again).toEqual({ dryRun: false, idleForMs: 0, wouldRemove: [], removed: [], failed: [] });
  });

  test("no VMs → vms prints the header and says so", async () => {
    const result = await m.run("vms");
    expect(result.stdout).toMatchInlineSnapshot(`
      "NAME  SESSION  STATUS  EXECS  CPUS  MEMORY  CREATED  LAST USED  LAST STOP REASON
      (no VMs)
      "
    `);
  });
});
