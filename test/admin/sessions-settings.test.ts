// `sessions`, `settings`, `sandbox`, `resources` and `docker` end to end against the real manager process: each
// script run as `bun run --silent <name>`, the table form snapshotted, the --json form parsed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { normalize, parseJson, startAdminManager, type AdminManager } from "./fixture";

type SessionJson = { id: string; rootSessionID: string | null; parentID: string | null; forkOf: string | null; directory: string; createdAt: string; sandboxed: boolean | null; vmName: string | null; vmStatus: string | null; activity: { state: string; attempt: number | null; since: string; reportedAt: string; holds: boolean } | null };
type SandboxJson = {
  sessionID: string;
  rootSessionID: string;
  sandboxed: boolean;
  source: string;
  serverEnabled: boolean;
  resources: { override: { cpus: number | null; memoryMib: number | null } | null; effective: { cpus: number; memoryMib: number } };
  network: { override: unknown; effective: unknown };
  toggledAt: string | null;
  vmName: string;
  lastStop: { vmName: string; status: string; reason: string | null; at: string } | null;
};

let m: AdminManager;
beforeAll(async () => {
  // Env defaults pinned, so the settings snapshots do not depend on this host's CPUs and memory.
  m = await startAdminManager({ env: { SANDBOX_CPUS: "1", SANDBOX_MEMORY: "1G" } });
  // `sessions` sorts by creation time (ms): each registration starts in a later millisecond than the last.
  for (const body of [{ id: "ses_root" }, { id: "ses_child", parentID: "ses_root" }, { id: "ses_fork", forkOf: "ses_root" }]) {
    await m.client.sessions.register({ ...body, directory: "/work/project" });
    const registeredBy = Date.now();
    while (Date.now() === registeredBy) {
      // a spin of at most one millisecond, not a sleep
    }
  }
}, 60_000);
afterAll(async () => m?.cleanup(), 60_000);

describe("bun run sessions", () => {
  test("piped → a plain table of every session with root, parent and fork origin", async () => {
    const result = await m.run("sessions");
    expect(result).toMatchObject({ exitCode: 0, stderr: "" });
    expect(normalize(result.stdout)).toMatchInlineSnapshot(`
      "ID         ROOT      PARENT    FORK OF   SANDBOX  ACTIVITY  VM  DIRECTORY      CREATED
      ses_root   ses_root  -         -         on       -         -   /work/project  YYYY-MM-DDThh:mm:ssZ
      ses_child  ses_root  ses_root  -         on       -         -   /work/project  YYYY-MM-DDThh:mm:ssZ
      ses_fork   ses_fork  -         ses_root  on       -         -   /work/project  YYYY-MM-DDThh:mm:ssZ
      "
    `);
  });

  test("--json → the sessions with ISO times", async () => {
    const { sessions } = parseJson<{ sessions: SessionJson[] }>(await m.run("sessions", ["--json"]));
    expect(sessions.map((s) => s.id).toSorted()).toEqual(["ses_child", "ses_fork", "ses_root"]);
    expect(sessions.find((s) => s.id === "ses_child")).toEqual({
      activity: null,
      id: "ses_child",
      rootSessionID: "ses_root",
      parentID: "ses_root",
      forkOf: null,
      directory: "/work/project",
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      sandboxed: true,
      vmName: null, // no VM until its root's first command
      vmStatus: null,
    });
  });
});

describe("bun run settings", () => {
  test("show → every setting with its unit", async () => {
    const result = await m.run("settings");
    expect(result).toMatchObject({ exitCode: 0, stderr: "" });
    expect(result.stdout).toMatchInlineSnapshot(`
      "SETTING                VALUE
      enabled                true
      defaultForNewSessions  true
      cpus                   1
      memoryMib              1024 (1G)
      idleStopMinutes        30 (30m)
      idleSuspendMinutes     0 (off)
      holdWhileBusy          true
      maxHoldMinutes         480 (8h)
      maxRunningVms          4
      execTimeoutMs          120000 (2m)
      network                none
      forwardGitCredentials  false
      diskMib                4096 (4G)
      image                  builtin
      maxImageMib            16384 (16G)
      isolation              microvm
      docker                 false
      "
    `);
  });

  test("set key=value … → parsed (booleans, sizes, durations), applied, shown", async () => {
    const result = await m.run("settings", ["set", "memoryMib=1.5G", "idleStopMinutes=2h", "execTimeoutMs=90s", "maxRunningVms=3", "defaultForNewSessions=off", "network=allowlist:api.github.com,*.example.com"]);
    expect(result).toMatchObject({ exitCode: 0, stderr: "" });
    expect(result.stdout).toMatchInlineSnapshot(`
      "SETTING                VALUE
      enabled                true
      defaultForNewSessions  false
      cpus                   1
      memoryMib              1536 (1.5G)
      idleStopMinutes        120 (2h)
      idleSuspendMinutes     0 (off)
      holdWhileBusy          true
      maxHoldMinutes         480 (8h)
      maxRunningVms          3
      execTimeoutMs          90000 (90s)
      network                allowlist: api.github.com, *.example.com
      forwardGitCredentials  false
      diskMib                4096 (4G)
      image                  builtin
      maxImageMib            16384 (16G)
      isolation              microvm
      docker                 false
      "
    `);
    expect(await m.client.settings.get()).toMatchObject({ memoryMib: 1536, idleStopMinutes: 120, execTimeoutMs: 90_000, maxRunningVms: 3, defaultForNewSessions: false, network: { mode: "allowlist", allow: ["api.github.com", "*.example.com"] } });
  });

  test("set key=null → back to the default; --json → the settings object", async () => {
    const settings = parseJson<Record<string, unknown>>(await m.run("settings", ["set", "memoryMib=null", "idleStopMinutes=null", "execTimeoutMs=null", "maxRunningVms=null", "defaultForNewSessions=null", "network=null", "--json"]));
    expect(settings).toEqual(await m.client.settings.get());
    expect(settings).toMatchObject({ idleStopMinutes: 30, execTimeoutMs: 120_000, maxRunningVms: 4, defaultForNewSessions: true, network: { mode: "none" } });
  });

  test("an unknown key or a bad value → exit 2 before anything is sent; a range the manager refuses → exit 1", async () => {
    const before = await m.client.settings.get();
    expect(await m.run("settings", ["set", "bogus=1"])).toEqual({
      exitCode: 2,
      stdout: "",
      stderr: 'settings: unknown setting "bogus" — fix: use one of enabled, defaultForNewSessions, cpus, memoryMib, idleStopMinutes, idleSuspendMinutes, holdWhileBusy, maxHoldMinutes, maxRunningVms, execTimeoutMs, network, forwardGitCredentials, diskMib, image, maxImageMib, isolation, docker\n',
    });
    expect((await m.run("settings", ["set", "cpus=two"])).stderr).toBe('settings: cpus "two" is not a whole number — fix: write it like 2\n');
    const refused = await m.run("settings", ["set", "maxRunningVms=100000"]);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toStartWith("settings: maxRunningVms");
    expect(await m.client.settings.get()).toEqual(before);
  });
});

describe("bun run sandbox", () => {
  test("<session> → shows the mode, its source, resources and VM name", async () => {
    const result = await m.run("sandbox", ["ses_root"]);
    expect(result).toMatchObject({ exitCode: 0, stderr: "" });
    expect(normalize(result.stdout)).toMatchInlineSnapshot(`
      "SESSION    ses_root
      ROOT       ses_root
      SANDBOX    on (default)
      CPUS       1 (default)
      MEMORY     1G (default)
      NETWORK    none (default)
      IMAGE      builtin (default)
      ISOLATION  microvm (default)
      DOCKER     off (default)
      VM         ocm-session-XXXXXXXXXXXX
      TOGGLED    -
      LAST STOP  -
      "
    `);
  });

  test("<session> off / on → toggled explicitly; --json → the state with an ISO toggledAt", async () => {
    const off = await m.run("sandbox", ["ses_root", "off"]);
    expect(normalize(off.stdout)).toMatchInlineSnapshot(`
      "SESSION    ses_root
      ROOT       ses_root
      SANDBOX    off (explicit)
      CPUS       1 (default)
      MEMORY     1G (default)
      NETWORK    none (default)
      IMAGE      builtin (default)
      ISOLATION  microvm (default)
      DOCKER     off (default)
      VM         ocm-session-XXXXXXXXXXXX
      TOGGLED    YYYY-MM-DDThh:mm:ssZ
      LAST STOP  -
      "
    `);
    expect((await m.client.sandbox.get("ses_root")).sandboxed).toBe(false);
    const on = parseJson<SandboxJson>(await m.run("sandbox", ["ses_root", "on", "--json"]));
    expect(on).toMatchObject({ sessionID: "ses_root", sandboxed: true, source: "explicit", serverEnabled: true, vmName: (await m.client.sandbox.get("ses_root")).vmName });
    expect(on.toggledAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(Object.keys(on)).toEqual(["sessionID", "rootSessionID", "sandboxed", "source", "serverEnabled", "resources", "network", "image", "isolation", "docker", "toggledAt", "vmName", "lastStop"]);
  });

  test("a child, an unknown session, a bad mode → the reason and the fix, exit 1 / 1 / 2", async () => {
    const child = await m.run("sandbox", ["ses_child", "off"]);
    expect(child.exitCode).toBe(1);
    expect(child.stderr).toContain('session "ses_child" is a child of root "ses_root"');
    expect(await m.run("sandbox", ["ses_nope", "on"])).toMatchObject({ exitCode: 1, stderr: expect.stringContaining("fix: list the registered sessions with `bun run sessions`") });
    expect(await m.run("sandbox", ["ses_root", "maybe"])).toMatchObject({ exitCode: 2, stderr: expect.stringContaining('"maybe" is neither on nor off') });
  });
});

describe("bun run resources", () => {
  test("--cpus N --memory 2G → the session's override, shown", async () => {
    const result = await m.run("resources", ["ses_root", "--cpus", "1", "--memory", "512M"]);
    expect(result).toMatchObject({ exitCode: 0, stderr: "" });
    expect(normalize(result.stdout)).toMatchInlineSnapshot(`
      "SESSION    ses_root
      ROOT       ses_root
      SANDBOX    on (explicit)
      CPUS       1 (session override)
      MEMORY     512M (session override)
      NETWORK    none (default)
      IMAGE      builtin (default)
      ISOLATION  microvm (default)
      DOCKER     off (default)
      VM         ocm-session-XXXXXXXXXXXX
      TOGGLED    YYYY-MM-DDThh:mm:ssZ
      LAST STOP  -
      "
    `);
    expect((await m.client.sandbox.get("ses_root")).resources.override).toEqual({ cpus: 1, memoryMib: 512 });
  });

  test("--clear → the override is gone; --json → effective resources from the settings", async () => {
    const json = parseJson<SandboxJson>(await m.run("resources", ["ses_root", "--clear", "--json"]));
    const settings = await m.client.settings.get();
    expect(json.resources).toEqual({ override: null, effective: { cpus: settings.cpus, memoryMib: settings.memoryMib } });
  });

  test("bad combinations and values → exit 2; beyond the host → exit 1 with the host's limit", async () => {
    expect(await m.run("resources", ["ses_root", "--clear", "--cpus", "1"])).toMatchObject({ exitCode: 2, stderr: expect.stringContaining("--clear cannot be combined") });
    expect(await m.run("resources", ["ses_root", "--memory", "lots"])).toMatchObject({ exitCode: 2, stderr: expect.stringContaining("write it like 2G, 512M or 1536 (MiB)") });
    expect(await m.run("resources", ["--cpus", "1"])).toMatchObject({ exitCode: 2, stderr: "resources: missing <session> — fix: see `bun run resources --help`\n" });
    const tooMany = await m.run("resources", ["ses_root", "--cpus", "4096"]);
    expect(tooMany.exitCode).toBe(1);
    expect(tooMany.stderr).toMatch(/host's \d+ CPUs/);
  });
});

describe("bun run docker", () => {
  test("<session> on → the session's override, shown; --clear → the default again; start with docker off → exit 1 with how to turn it on; a bad action → exit 2", async () => {
    const on = await m.run("docker", ["ses_root", "on"]);
    expect(on).toMatchObject({ exitCode: 0, stderr: "" });
    expect(normalize(on.stdout)).toContain("DOCKER     on (session override)");
    const cleared = parseJson<{ docker: unknown }>(await m.run("docker", ["ses_root", "--clear", "--json"]));
    expect(cleared.docker).toEqual({ override: null, effective: false });
    const start = await m.run("docker", ["ses_root", "start"]);
    expect(start.exitCode).toBe(1);
    expect(start.stderr).toContain('docker is off for session ses_root: turn it on for its root with PUT /api/session-sandbox/ses_root {"docker": true}');
    expect(await m.run("docker", ["ses_root", "maybe"])).toMatchObject({ exitCode: 2, stderr: expect.stringContaining('"maybe" is not a docker action') });
  });
});
