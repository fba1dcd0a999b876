// `bun run images` end to end against the real manager process on the embedded runtime and a real
// registry on loopback: pull with progress, list, a session's image, rm refused while used, prune, and
// the failures an operator meets (a registry that is down, a bad reference) as one line with the reason.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startRegistry, type Registry } from "../fixtures/oci-registry";
import { parseJson, startAdminManager, type AdminManager } from "./fixture";

let m: AdminManager;
let registry: Registry;
let reference: string;
beforeAll(async () => {
  m = await startAdminManager({ vms: true });
  registry = await startRegistry();
  await registry.push("ops/tools", "v1", "ops-tools");
  reference = `${registry.address}/ops/tools:v1`;
  await m.client.sessions.register({ id: "ses_ops", directory: m.makeRepo("ops") });
}, 900_000);
afterAll(async () => {
  await registry?.stop();
  await m?.cleanup();
}, 120_000);

describe("bun run images", () => {
  test("pull <reference> → progress lines, then ready with the cached path; the list shows it", async () => {
    const pulled = await m.run("images", ["pull", reference]);
    expect(pulled).toMatchObject({ exitCode: 0, stderr: "" });
    const lines = pulled.stdout.trim().split("\n");
    expect(lines.some((line) => /^(pulling|ready): /.test(line))).toBe(true);
    expect(lines.at(-1)).toMatch(/^ready: \/.*\/images\/sha256-[0-9a-f]{64} \(\d+M\)$/);
    const listed = await m.run("images");
    expect(listed.stdout).toMatch(/^IMAGE +STATUS +SIZE +USED BY +LAST USED +DETAIL$/m);
    expect(listed.stdout).toMatch(/^builtin +ready /m);
    expect(listed.stdout).toContain(`${registry.address}/ops/tools:v1`);
    const json = parseJson<{ images: { image: string; status: string }[] }>(await m.run("images", ["--json"]));
    expect(json.images.map((image) => [image.image, image.status])).toContainEqual([`oci:${reference}`, "ready"]);
  }, 120_000);

  test("set <session> <reference> → the session's image; its next command boots it; rm while used → exit 1 naming the user", async () => {
    const set = await m.run("images", ["set", "ses_ops", reference]);
    expect(set).toMatchObject({ exitCode: 0 });
    expect(set.stdout).toContain(`IMAGE      ${reference} (session override)`);
    const ran = await m.client.run("ses_ops", { command: "cat /etc/image-marker", cwd: (await m.client.sessions.get("ses_ops")).directory });
    expect(ran).toMatchObject({ exitCode: 0, stdout: "ops-tools\n" });
    const rm = await m.run("images", ["rm", `oci:${reference}`]);
    expect(rm.exitCode).toBe(1);
    expect(rm.stderr).toContain("is in use by session ses_ops");
  }, 120_000);

  test("a registry that is down, a bad reference, a bad package name → exit 1 with the reason; no VM booted", async () => {
    await registry.pause();
    try {
      const down = await m.run("images", ["pull", `${registry.address}/ops/other:v1`]);
      expect(down.exitCode).toBe(1);
      expect(down.stderr).toContain("connection refused");
    } finally {
      await registry.resume();
    }
    const bad = await m.run("images", ["pull", "Not/A Ref"]);
    expect(bad).toMatchObject({ exitCode: 2 });
    const invalid = await m.run("images", ["pull", "team/UPPER:v1"]);
    expect(invalid.exitCode).toBe(1);
    expect(invalid.stderr).toContain('"team/UPPER:v1" is not a valid OCI reference');
    const packages = await m.run("images", ["pull", "builtin+Bad_Name"]);
    expect(packages.exitCode).toBe(1);
    expect(packages.stderr).toContain('"Bad_Name" is not a Debian package name');
  }, 120_000);

  test("set --clear, then prune → the unused image and its directory go; the built-in image stays", async () => {
    expect(await m.run("images", ["set", "ses_ops", "--clear"])).toMatchObject({ exitCode: 0 });
    await m.client.vms.sweep({ idleForMs: 0 });
    const dry = await m.run("images", ["prune", "--dry-run"]);
    expect(dry.stdout).toContain(`would remove oci:${reference}`);
    const pruned = await m.run("images", ["prune"]);
    expect(pruned.stdout).toContain(`removed oci:${reference}`);
    const left = parseJson<{ images: { image: string }[] }>(await m.run("images", ["--json"])).images.map((image) => image.image);
    expect(left).not.toContain(`oci:${reference}`);
    expect(left).toContain("default");
  }, 120_000);
});
