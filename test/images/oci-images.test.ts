// Guest images from a registry: an OCI image pushed to a real registry on loopback is
// pulled, cached by digest and booted by the real embedded runtime; a second session with the same
// reference reuses the cache; a bad reference is a 400 naming it; a registry that is down fails the
// command with the reason and boots nothing; an image change recreates the VM and keeps /home/agent;
// a hostile image brings no device node or set-id bit to the host; unused images are pruned.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { SandboxEvent } from "../../sdk/index";
import { makeActorFixture, type ActorFixture } from "../actors/fixture";
import { startRegistry, type Registry } from "../fixtures/oci-registry";

let f: ActorFixture;
let registry: Registry;
const events: SandboxEvent[] = [];
const stopEvents = new AbortController();

beforeAll(async () => {
  f = await makeActorFixture();
  registry = await startRegistry();
  await f.client.settings.patch({ maxRunningVms: 8 });
  for (const id of ["ses_img_a", "ses_img_b", "ses_img_c", "ses_img_down", "ses_img_hostile", "ses_img_switch"]) {
    await f.client.sessions.register({ id, directory: f.makeRepo(id) });
  }
  void (async () => {
    for await (const event of f.events.subscribe(stopEvents.signal)) events.push(event as SandboxEvent);
  })();
}, 900_000);

afterAll(async () => {
  stopEvents.abort();
  await registry?.stop();
  await f?.teardown();
}, 120_000);

const dirOf = (id: string) => f.services.sessions.require(id).directory;
const run = (id: string, command: string) => f.client.run(id, { command, cwd: dirOf(id), timeoutMs: 60_000 });
const oci = (reference: string) => ({ kind: "oci" as const, reference });
const imageCacheDir = () => join(f.dataDir, "images");

describe("OCI images from a loopback registry", () => {
  test("pushed to a loopback registry → pulled, cached by digest, booted; a second session with the same reference reuses the cache", async () => {
    const digest = await registry.push("team/tools", "v1", "from-the-registry-v1");
    const reference = `${registry.address}/team/tools:v1`;
    await f.client.sandbox.set("ses_img_a", { image: oci(reference) });

    const firstStarted = performance.now();
    const first = await run("ses_img_a", "cat /etc/image-marker; uname -s; ls /home/agent >/dev/null && echo home-ok");
    const firstMs = performance.now() - firstStarted;
    expect(first).toMatchObject({ exitCode: 0, stdout: "from-the-registry-v1\nLinux\nhome-ok\n" });

    const listed = (await f.client.images.list()).images.find((image) => image.image === `oci:${reference}`);
    expect(listed).toMatchObject({ status: "ready", digest, path: join(imageCacheDir(), digest.replace(":", "-")), usedBy: expect.arrayContaining(["session ses_img_a"]) });
    expect(listed!.sizeBytes).toBeGreaterThan(0);
    const phases = events.filter((e) => e.type === "image" && e.image === `oci:${reference}`).map((e) => (e as { phase: string }).phase);
    expect(phases[0]).toBe("pulling");
    expect(phases).toContain("progress");
    expect(phases.at(-1)).toBe("ready");

    // The second session never asks the registry: with the registry down it still boots from the cache.
    await registry.pause();
    try {
      await f.client.sandbox.set("ses_img_b", { image: oci(reference) });
      const secondStarted = performance.now();
      const second = await run("ses_img_b", "cat /etc/image-marker");
      const secondMs = performance.now() - secondStarted;
      expect(second).toMatchObject({ exitCode: 0, stdout: "from-the-registry-v1\n" });
      console.log(`[timing] first session (pull + boot + command): ${firstMs.toFixed(0)} ms; second session, same reference (cache + boot + command): ${secondMs.toFixed(0)} ms`);
    } finally {
      await registry.resume();
    }
    expect(readdirSync(imageCacheDir()).filter((entry) => entry.startsWith("sha256-"))).toEqual([digest.replace(":", "-")]);
  }, 180_000);

  test("another tag of the same digest → shares the one cache directory", async () => {
    registry.tag("team/tools", "v1", "stable");
    await f.client.sandbox.set("ses_img_c", { image: oci(`${registry.address}/team/tools:stable`) });
    expect(await run("ses_img_c", "cat /etc/image-marker")).toMatchObject({ exitCode: 0, stdout: "from-the-registry-v1\n" });
    const images = (await f.client.images.list()).images;
    const paths = new Set(images.filter((image) => image.image.includes("/team/tools:")).map((image) => image.path));
    expect(paths.size).toBe(1);
    expect(images.find((image) => image.image.endsWith("/team/tools:stable"))!.detail).toMatch(/^cached by digest sha256:/);
  }, 120_000);

  test("a bad reference → 400 IMAGE_INVALID naming it, for a session and the settings; nothing changes", async () => {
    for (const reference of ["Bad Ref!!", "registry.example/UPPER/case", "-flag", "a".repeat(300)]) {
      const session = await f.request("PUT", "/api/session-sandbox/ses_img_a", { body: JSON.stringify({ image: oci(reference) }) });
      expect(session.status).toBe(400);
      const body = (await session.json()) as { code: string; message: string };
      expect(body.code).toBe("IMAGE_INVALID");
      expect(body.message).toContain(reference.slice(0, 40));
      const settings = await f.request("PATCH", "/api/settings/sandbox", { body: JSON.stringify({ image: oci(reference) }) });
      expect(settings.status).toBe(400);
    }
    const packages = await f.request("PATCH", "/api/settings/sandbox", { body: JSON.stringify({ image: { kind: "recipe", packages: ["jq", "Bad_Name"] } }) });
    expect(packages.status).toBe(400);
    expect(((await packages.json()) as { message: string }).message).toContain('"Bad_Name" is not a Debian package name');
    expect((await f.client.sandbox.get("ses_img_a")).image.override).toEqual(oci(`${registry.address}/team/tools:v1`));
    expect((await f.client.settings.get()).image).toEqual({ kind: "recipe", packages: [] });
  });

  test("a registry that is down → the command fails with the reason (503 IMAGE_UNAVAILABLE) and nothing boots", async () => {
    await registry.push("team/later", "v1", "later");
    await registry.pause();
    try {
      await f.client.sandbox.set("ses_img_down", { image: oci(`${registry.address}/team/later:v1`) });
      const response = await f.request("POST", "/api/sessions/ses_img_down/exec", { body: JSON.stringify({ command: "echo must-not-run", cwd: dirOf("ses_img_down") }) });
      expect(response.status).toBe(503);
      const body = (await response.json()) as { code: string; message: string };
      expect(body.code).toBe("IMAGE_UNAVAILABLE");
      expect(body.message).toContain(`${registry.address}/team/later:v1`);
      expect(body.message).toContain("connection refused");
      expect((await f.driver.list({})).map((vm) => vm.name)).not.toContain(f.services.sessionSandbox.get("ses_img_down").vmName);
      const failed = (await f.client.images.list()).images.find((image) => image.image.endsWith("/team/later:v1"));
      expect(failed).toMatchObject({ status: "failed", detail: expect.stringContaining("connection refused") });
    } finally {
      await registry.resume();
    }
    // Back up: the next command retries the pull and runs.
    expect(await run("ses_img_down", "cat /etc/image-marker")).toMatchObject({ exitCode: 0, stdout: "later\n" });
    // An unknown tag on a live registry: the registry's own reason.
    await f.client.sandbox.set("ses_img_down", { image: oci(`${registry.address}/team/later:nope`) });
    const unknown = await f.request("POST", "/api/sessions/ses_img_down/exec", { body: JSON.stringify({ command: "true", cwd: dirOf("ses_img_down") }) });
    expect(unknown.status).toBe(503);
    expect(((await unknown.json()) as { message: string }).message).toContain("manifest unknown");
  }, 120_000);

  test("an image change → the VM is recreated on the new image and /home/agent is kept; clearing goes back to the default", async () => {
    const id = "ses_img_switch";
    expect(await run(id, "echo kept > /home/agent/note && cat /etc/session-sandbox-rootfs | cut -c1-8")).toMatchObject({ exitCode: 0, stdout: "bookworm\n" });
    await f.client.sandbox.set(id, { image: oci(`${registry.address}/team/tools:v1`) });
    expect(await run(id, "cat /home/agent/note /etc/image-marker")).toMatchObject({ exitCode: 0, stdout: "kept\nfrom-the-registry-v1\n" });
    await f.client.sandbox.set(id, { image: null });
    expect(await run(id, "cat /home/agent/note && node --version >/dev/null && echo has-node")).toMatchObject({ exitCode: 0, stdout: "kept\nhas-node\n" });
  }, 180_000);

  test("a hostile image: its device node and setuid bit never reach the host; an image without a shell fails the pull with the reason", async () => {
    const digest = await registry.push("team/hostile", "v1", "hostile", { deviceNode: true, setuidFile: true });
    await f.client.sandbox.set("ses_img_hostile", { image: oci(`${registry.address}/team/hostile:v1`) });
    expect(await run("ses_img_hostile", "cat /etc/image-marker; ls /etc/evil-device 2>&1 || echo no-device")).toMatchObject({ exitCode: 0 });
    const rootfs = join(imageCacheDir(), digest.replace(":", "-"));
    expect(existsSync(join(rootfs, "etc/evil-device"))).toBe(false);
    expect(lstatSync(join(rootfs, "usr/bin/suid-busybox")).mode & 0o6000).toBe(0);

    await registry.push("team/noshell", "v1", "noshell", { noShell: true });
    await f.client.sandbox.set("ses_img_hostile", { image: oci(`${registry.address}/team/noshell:v1`) });
    const response = await f.request("POST", "/api/sessions/ses_img_hostile/exec", { body: JSON.stringify({ command: "true", cwd: dirOf("ses_img_hostile") }) });
    expect(response.status).toBe(503);
    expect(((await response.json()) as { message: string }).message).toContain("the image has no /bin/sh");
  }, 120_000);

  test("an image without socat → its VM still reaches an allowed host (the egress forwarder is the VM relay, bound in), and a forwarded port reaches a server in it", async () => {
    const id = "ses_img_relay";
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("hello-through-the-relay") });
    try {
      await registry.push("team/bare", "v1", "bare");
      await f.client.sessions.register({ id, directory: f.makeRepo(id) });
      await f.client.sandbox.set(id, { image: oci(`${registry.address}/team/bare:v1`), network: { mode: "allowlist", allow: ["loopback"] } });
      // busybox wget takes http_proxy (the manager's) and ignores no_proxy: it asks the proxy for the host's loopback.
      const fetched = await run(id, `command -v socat || echo no-socat; wget -q -O - http://127.0.0.1:${server.port}/`);
      expect(fetched).toMatchObject({ exitCode: 0, stdout: "no-socat\nhello-through-the-relay" });
      await run(id, "mkdir -p /tmp/www && echo served-by-busybox > /tmp/www/index.html && httpd -p 8132 -h /tmp/www");
      const forward = await f.client.ports.open(id, { port: 8132 });
      expect(await (await fetch(forward.url)).text()).toBe("served-by-busybox\n");
    } finally {
      server.stop(true);
      await f.client.sessions.delete(id).catch(() => undefined);
    }
  }, 120_000);

  test("prune → removes images nobody uses, keeps those a session or VM uses; DELETE of a used one → 409 naming the users", async () => {
    const inUse = await f.request("DELETE", `/api/images/${encodeURIComponent(`oci:${registry.address}/team/tools:v1`)}`);
    expect(inUse.status).toBe(409);
    expect(((await inUse.json()) as { message: string }).message).toContain("session ses_img_a");
    for (const id of ["ses_img_a", "ses_img_b", "ses_img_c", "ses_img_down", "ses_img_hostile"]) await f.client.sandbox.set(id, { image: null });
    await f.supervisor.sweep(0);
    // The background GC's rule: unused for at least the grace period. Everything here was used seconds ago.
    expect((await f.client.images.prune({ olderThanMs: 60 * 60 * 1000 })).removed).toEqual([]);
    const dry = await f.client.images.prune({ dryRun: true });
    expect(dry.removed.length).toBeGreaterThan(0);
    expect(existsSync(join(imageCacheDir()))).toBe(true);
    const pruned = await f.client.images.prune();
    expect(pruned.removed.toSorted()).toEqual(dry.removed.toSorted());
    expect((await f.client.images.list()).images.map((image) => image.image)).toEqual(["default"]);
    expect(readdirSync(imageCacheDir())).toEqual([]);
  }, 120_000);
});
