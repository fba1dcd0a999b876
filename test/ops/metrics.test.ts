// GET /metrics over the real runtime: build_info, the sessions gauge, labelled counters at 0 before any
// event, per-VM CPU, memory, pids and disk read at scrape time (and gone with the VM), `promtool check
// metrics` clean (Debian's prometheus package, installed by scripts/install-test-deps.sh); and the stats
// routes the `stats` command reads.
import { TIERS } from "../../runtime/tiers/index";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { createVmStats } from "../../app/services/vm-stats";
import { newRecord } from "../../app/supervisor/vm-records";
import { createDriver } from "../../workers/create-driver";
import { eventually, makeActorFixture, type ActorFixture } from "../actors/fixture";
import { makeTempDir } from "../helpers";

type Family = { name: string; type: string; metrics: { value?: string; labels?: Record<string, string> }[] };

let f: ActorFixture;
let repo: string;

beforeAll(async () => {
  f = await makeActorFixture();
  repo = f.makeRepo();
}, 600_000);
afterAll(async () => {
  await f?.teardown();
}, 120_000);

async function scrape(): Promise<{ text: string; families: Family[]; value(name: string, labels?: Record<string, string>): number | undefined }> {
  const text = await (await f.request("GET", "/metrics")).text();
  const families = parsePrometheusTextFormat(text) as Family[];
  const value = (name: string, labels: Record<string, string> = {}) => {
    const metric = families.find((m) => m.name === name)?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
    return metric?.value === undefined ? undefined : Number(metric.value);
  };
  return { text, families, value };
}

/** `promtool check metrics` reads the exposition on stdin: exit 0 and no output when it finds nothing. */
async function promtool(text: string): Promise<{ exitCode: number; output: string }> {
  const proc = Bun.spawn(["promtool", "check", "metrics"], { stdin: new Blob([text]), stdout: "pipe", stderr: "pipe" });
  const [out, err, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { exitCode, output: out + err };
}

describe("metrics", () => {
  test("scrape before any event → counters at 0 for every known label, build_info, sessions gauge; promtool clean", async () => {
    const { text, value } = await scrape();
    expect(value("sandbox_build_info", { version: "test", runtime: "local", bun_version: Bun.version })).toBe(1);
    for (const outcome of ["ok", "nonzero", "timeout", "cancelled", "failed"]) expect(value("sandbox_execs_total", { outcome })).toBe(0);
    for (const reason of ["idle", "cap", "toggle-off", "deleted", "spec-change", "crash", "sweep", "manual", "disabled", "recovery"]) {
      expect(value("sandbox_vm_removals_total", { reason })).toBe(0);
    }
    for (const reason of ["not_sandboxed", "vm_cap_reached", "runtime_failed", "internal"]) expect(value("sandbox_exec_refusals_total", { reason })).toBe(0);
    for (const kind of ["root", "child"]) for (const sandboxed of ["true", "false"]) expect(value("sandbox_sessions", { kind, sandboxed })).toBe(0);
    expect(await promtool(text)).toEqual({ exitCode: 0, output: "" });
  });

  test("two roots (one off) and a child, a busy VM → sessions by kind, per-VM CPU, memory, pids, disk; promtool clean", async () => {
    await f.client.sessions.register({ id: "ses_m1", directory: repo });
    await f.client.sessions.register({ id: "ses_m1_child", parentID: "ses_m1", directory: repo });
    await f.client.sessions.register({ id: "ses_m2", directory: repo });
    await f.client.sandbox.set("ses_m2", { sandboxed: false });
    const vm = (await f.client.sandbox.get("ses_m1")).vmName;
    const run = await f.client.run("ses_m1", { command: "head -c 20m /dev/zero > /tmp/fill; sleep 1000 >/dev/null 2>&1 & echo ok", cwd: repo });
    expect(run.stdout).toBe("ok\n");

    const { text, value } = await scrape();
    expect(value("sandbox_sessions", { kind: "root", sandboxed: "true" })).toBe(1);
    expect(value("sandbox_sessions", { kind: "root", sandboxed: "false" })).toBe(1);
    expect(value("sandbox_sessions", { kind: "child", sandboxed: "true" })).toBe(1);
    expect(value("sandbox_vm_cpu_seconds_total", { vm })).toBeGreaterThan(0);
    expect(value("sandbox_vm_memory_bytes", { vm })).toBeGreaterThan(20 << 20);
    expect(value("sandbox_vm_memory_limit_bytes", { vm })).toBeGreaterThan(0);
    expect(value("sandbox_vm_pids", { vm })).toBeGreaterThanOrEqual(2);
    expect(value("sandbox_vm_disk_size_bytes", { vm })).toBeGreaterThan(1 << 30); // diskMib defaults to 4096
    expect(value("sandbox_vm_disk_used_bytes", { vm })).toBeGreaterThan(0);
    expect(value("sandbox_execs_total", { outcome: "ok" })).toBe(1);
    expect(await promtool(text)).toEqual({ exitCode: 0, output: "" });

    const stats = await f.client.vms.stats(vm);
    expect(stats).toMatchObject({ name: vm, rootSessionID: "ses_m1", status: "running", available: true, reason: null });
    expect(stats.memoryBytes!).toBeGreaterThan(20 << 20);
    expect(stats.pidsLimit).toBe(1024);
    expect((await f.client.vms.allStats()).vms.map((v) => v.name)).toEqual([vm]);
    expect(await f.client.vms.stats("ocm-session-000000000000").catch((e) => e.code)).toBe("VM_NOT_FOUND");
  });

  test("VM removed → its per-VM series are gone", async () => {
    const vm = (await f.client.sandbox.get("ses_m1")).vmName;
    await f.client.vms.remove(vm);
    await eventually(async () => (await scrape()).value("sandbox_vm_memory_bytes", { vm }) === undefined);
    const { families } = await scrape();
    expect(families.find((m) => m.name === "sandbox_vm_disk_size_bytes")?.metrics ?? []).toEqual([]);
  });
});

describe("the scrape config in docs/operating.md", () => {
  test("promtool check config → valid, the bearer token read from its file", async () => {
    const doc = await Bun.file(join(import.meta.dir, "../../docs/operating.md")).text();
    const block = doc.match(/^( *)```yaml\n((?:\1 *scrape_configs:)[\s\S]*?)^\1```/m)!;
    // The block as written, less the indentation of its fence (it may sit inside a list item).
    const yaml = block[2]!.replace(new RegExp(`^${block[1]}`, "gm"), "");
    const dir = makeTempDir("ss-scrape-config-");
    try {
      writeFileSync(join(dir, "token"), "x".repeat(40));
      writeFileSync(join(dir, "prometheus.yml"), yaml.replace("/etc/prometheus/session-sandbox.token", join(dir, "token")));
      const proc = Bun.spawn(["promtool", "check", "config", join(dir, "prometheus.yml")], { stdout: "pipe", stderr: "pipe" });
      const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
      expect([code, err]).toEqual([0, ""]);
      expect(out).toContain("SUCCESS");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("vm stats without cgroups", () => {
  test("msb runtime → available false, the reason names msb, every number null", async () => {
    const stats = createVmStats({ driver: createDriver({ kind: "msb" }), noUsageReason: TIERS.microvm.unmeasured!, vms: () => [{ ...newRecord("ocm-session-aaaaaaaaaaaa", "ses_x", 0), status: "running" }] });
    const view = await stats.of("ocm-session-aaaaaaaaaaaa");
    expect(view).toMatchObject({ available: false, cpuSeconds: null, memoryBytes: null, pids: null, diskUsedBytes: null });
    expect(view.reason).toContain("msb runtime does not report per-VM usage");
  });
});
