// The isolation setting and a root session's override, in-process: which tiers are accepted (only those
// that work on this host; auto always), what a refusal says and that it changes nothing, forks inheriting
// the override, and a command whose tier stopped working being refused, never run in a weaker one.
import { afterEach, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import type { TierAvailability } from "../../runtime/isolation";
import { IsolationUnavailableError, RuntimeFailedError } from "../../sdk/index";
import { ALL_TIERS, makeTempDir, makeTestApp, snapshotDatabase, type TestApp } from "../helpers";

/** This host as the tests imagine it: the container tier works, gvisor is not installed, no KVM. */
const CONTAINER_ONLY: TierAvailability = {
  container: { available: true, reason: "local (crun 1.8)" },
  gvisor: { available: false, reason: "runsc not found (fix: apt-get install runsc)" },
  microvm: { available: false, reason: "/dev/kvm is missing (fix: run on a KVM host)" },
};

let t: TestApp | null = null;
afterEach(() => {
  t?.cleanup();
  t = null;
});

async function start(tiers: TierAvailability, dataDir?: string): Promise<TestApp> {
  t = makeTestApp({ tiers, dataDir });
  await t.client.sessions.register({ id: "ses_root", directory: "/repo" }).catch(() => undefined);
  return t;
}

describe("isolation setting and override", () => {
  test("a tier that works here → accepted; one that does not → 400 naming why and the fix; nothing changed", async () => {
    const app = await start(CONTAINER_ONLY);
    expect((await app.client.settings.patch({ isolation: "container" })).isolation).toBe("container");
    const before = snapshotDatabase(app.db);
    const refused = (await app.client.settings.patch({ isolation: "gvisor" }).catch((e) => e)) as IsolationUnavailableError;
    expect(refused).toBeInstanceOf(IsolationUnavailableError);
    expect(refused.status).toBe(400);
    expect(refused.message).toBe("isolation gvisor is not available here: runsc not found (fix: apt-get install runsc); nothing was changed. Choose a tier that works here (GET /api/health lists them), or auto");
    const override = (await app.client.sandbox.set("ses_root", { isolation: "microvm" }).catch((e) => e)) as IsolationUnavailableError;
    expect(override.code).toBe("ISOLATION_UNAVAILABLE");
    expect(override.message).toContain("/dev/kvm is missing");
    expect(snapshotDatabase(app.db)).toBe(before);
    // auto is always accepted: it means the strongest tier that works.
    expect((await app.client.sandbox.set("ses_root", { isolation: "auto" })).isolation).toEqual({ override: "auto", effective: "auto" });
  });

  test("a value that is no tier → 422 from the schema", async () => {
    const app = await start(ALL_TIERS);
    const res = await app.request("PATCH", "/api/settings/sandbox", { body: JSON.stringify({ isolation: "vm" }) });
    expect(res.status).toBe(422);
  });

  test("override → the root's own tier; null → the settings' again; a fork inherits it", async () => {
    const app = await start(ALL_TIERS);
    await app.client.settings.patch({ isolation: "container" });
    expect((await app.client.sandbox.set("ses_root", { isolation: "gvisor" })).isolation).toEqual({ override: "gvisor", effective: "gvisor" });
    await app.client.sessions.register({ id: "ses_fork", forkOf: "ses_root", directory: "/repo" });
    expect((await app.client.sandbox.get("ses_fork")).isolation).toEqual({ override: "gvisor", effective: "gvisor" });
    expect((await app.client.sandbox.set("ses_root", { isolation: null })).isolation).toEqual({ override: null, effective: "container" });
  });

  test("a tier that stopped working here → the command is refused (503) with the reason, never run in another tier", async () => {
    const dataDir = makeTempDir();
    const repo = makeTempDir("ss-isolation-repo-");
    const first = await start(ALL_TIERS, dataDir);
    await first.client.sessions.register({ id: "ses_repo", directory: repo });
    await first.client.sandbox.set("ses_repo", { isolation: "gvisor" });
    first.db.close();
    // The next start finds no runsc. (No runtime either: the refusal comes before any VM would boot.)
    const app = await start(CONTAINER_ONLY, dataDir);
    const error = (await app.client.run("ses_repo", { command: "true", cwd: repo }).catch((e) => e)) as RuntimeFailedError;
    expect(error).toBeInstanceOf(RuntimeFailedError);
    expect(error.status).toBe(503);
    expect(error.message).toBe("the session's isolation cannot be met, so the command was not run: isolation gvisor is not available here: runsc not found (fix: apt-get install runsc)");
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(repo, { recursive: true, force: true });
  });
});
