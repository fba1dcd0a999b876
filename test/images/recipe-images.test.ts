// Guest images from the built-in recipe plus extra Debian packages: a setting names
// packages, the manager builds the image in the background from a real apt repository on loopback (with
// progress events), the VM boots it with the packages installed, and a package apt cannot find fails the
// command with apt's reason and boots nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { SandboxEvent } from "../../sdk/index";
import { eventually, makeActorFixture, type ActorFixture } from "../actors/fixture";
import { startAptRepository, type AptRepository } from "../fixtures/apt-repository";

let f: ActorFixture;
let apt: AptRepository;
let repo: string;
const events: SandboxEvent[] = [];
const stopEvents = new AbortController();

beforeAll(async () => {
  apt = await startAptRepository([{ name: "ss-hello", output: "hello-from-a-deb" }]);
  f = await makeActorFixture({ aptSources: apt.sources });
  repo = f.makeRepo("recipe");
  await f.client.sessions.register({ id: "ses_recipe", directory: repo });
  void (async () => {
    for await (const event of f.events.subscribe(stopEvents.signal)) events.push(event as SandboxEvent);
  })();
}, 900_000);

afterAll(async () => {
  stopEvents.abort();
  await apt?.stop();
  await f?.teardown();
}, 120_000);

const run = (command: string) => f.client.run("ses_recipe", { command, cwd: repo, timeoutMs: 60_000 });

describe("the built-in image plus Debian packages", () => {
  test("settings name an extra package → built in the background from the apt repository with progress, then the VM has it and the toolchain", async () => {
    await f.client.settings.patch({ image: { kind: "recipe", packages: ["ss-hello"] } });
    // The build starts on the setting, before any command asks for it.
    await eventually(() => events.some((e) => e.type === "image" && e.image === "recipe:ss-hello" && e.phase === "building"), 10_000);
    const result = await run("ss-hello && node --version >/dev/null && echo toolchain-too");
    expect(result).toMatchObject({ exitCode: 0, stdout: "hello-from-a-deb\ntoolchain-too\n" });
    const progress = events.filter((e) => e.type === "image" && e.image === "recipe:ss-hello" && e.phase === "progress").map((e) => (e as { detail: string }).detail);
    expect(progress.some((line) => line.includes("apt-get install ss-hello"))).toBe(true);
    expect(progress.some((line) => line.includes("Setting up ss-hello"))).toBe(true);
    expect(apt.requests.some((path) => path.endsWith("ss-hello_1.0_all.deb"))).toBe(true);
    const image = (await f.client.images.list()).images.find((each) => each.image === "recipe:ss-hello");
    expect(image).toMatchObject({ status: "ready", usedBy: ["the settings' default", "a VM"] });
  }, 300_000);

  test("a package apt cannot find → the command fails with apt's reason (503 IMAGE_UNAVAILABLE), nothing boots, and the settings stay", async () => {
    await f.client.sessions.register({ id: "ses_recipe_missing", directory: f.makeRepo("missing") });
    await f.client.sandbox.set("ses_recipe_missing", { image: { kind: "recipe", packages: ["ss-not-in-the-repo"] } });
    const response = await f.request("POST", "/api/sessions/ses_recipe_missing/exec", { body: JSON.stringify({ command: "echo must-not-run", cwd: f.services.sessions.require("ses_recipe_missing").directory }) });
    expect(response.status).toBe(503);
    const body = (await response.json()) as { code: string; message: string };
    expect(body.code).toBe("IMAGE_UNAVAILABLE");
    expect(body.message).toContain("Unable to locate package ss-not-in-the-repo");
    expect((await f.driver.list({})).map((vm) => vm.name)).not.toContain(f.services.sessionSandbox.get("ses_recipe_missing").vmName);
    expect((await f.client.settings.get()).image).toEqual({ kind: "recipe", packages: ["ss-hello"] });
  }, 300_000);
});
