// An image that unpacks far past its download (a 2 GiB file of zeros is a few MB in the
// registry) is stopped at the maxImageMib limit while it unpacks, not after: the disk never loses much more
// than the limit, the partial directory is removed, the command fails with 413 IMAGE_TOO_LARGE and the image
// event says so. The same for a recipe build. No VM boots.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, statfsSync } from "node:fs";
import { join } from "node:path";
import { ImageTooLargeError, type SandboxEvent } from "../../sdk/index";
import { makeActorFixture, recordEvents, type ActorFixture } from "../actors/fixture";
import { startRegistry, type Registry } from "../fixtures/oci-registry";

const MIB = 1024 * 1024;
const LIMIT_MIB = 128;
const BOMB_BYTES = 2048 * MIB;

let f: ActorFixture;
let registry: Registry;
let recorded: ReturnType<typeof recordEvents>;

beforeAll(async () => {
  f = await makeActorFixture();
  registry = await startRegistry();
  await f.client.settings.patch({ maxImageMib: LIMIT_MIB });
  for (const id of ["ses_bomb", "ses_big_build"]) await f.client.sessions.register({ id, directory: f.makeRepo(id) });
  recorded = recordEvents(f);
}, 900_000);

afterAll(async () => {
  recorded?.stop();
  await registry?.stop();
  await f?.teardown();
}, 120_000);

const cacheDir = () => join(f.dataDir, "images");
const freeBytes = () => {
  const stats = statfsSync(f.dataDir);
  return stats.bfree * stats.bsize;
};

/** Runs `work` while sampling how much free space the disk lost at most meanwhile. */
async function withDiskWatch<T>(work: () => Promise<T>): Promise<{ result: T | Error; maxDrop: number }> {
  const start = freeBytes();
  let maxDrop = 0;
  const timer = setInterval(() => (maxDrop = Math.max(maxDrop, start - freeBytes())), 20);
  try {
    const result = await work().catch((error: Error) => error);
    return { result, maxDrop };
  } finally {
    clearInterval(timer);
  }
}

function expectNothingLeftIn(dir: string) {
  const left = existsSync(dir) ? readdirSync(dir) : [];
  expect(left.filter((entry) => entry.endsWith(".partial"))).toEqual([]);
}

describe(`an image past maxImageMib (${LIMIT_MIB} MiB)`, () => {
  test("a 2 GiB bomb from a registry → stopped while unpacking, partial removed, 413 IMAGE_TOO_LARGE and a failed image event; no VM", async () => {
    const digest = await registry.push("bombs/zeros", "v1", "bomb", { zerosBytes: BOMB_BYTES });
    const reference = `${registry.address}/bombs/zeros:v1`;
    await f.client.sandbox.set("ses_bomb", { image: { kind: "oci", reference } });
    const { result, maxDrop } = await withDiskWatch(() => f.client.run("ses_bomb", { command: "true", cwd: f.services.sessions.require("ses_bomb").directory }));
    expect(result).toBeInstanceOf(ImageTooLargeError);
    expect((result as ImageTooLargeError).status).toBe(413);
    expect((result as Error).message).toMatch(new RegExp(`larger than the limit of ${LIMIT_MIB} MiB \\(maxImageMib\\).*Raise the limit`));
    // Checked while it unpacked: the disk lost a poll's worth past the limit, never the bomb's 2 GiB.
    console.log(`[image bomb] the disk lost at most ${(maxDrop / MIB).toFixed(0)} MiB while a ${BOMB_BYTES / MIB} MiB layer was stopped at ${LIMIT_MIB} MiB`);
    expect(maxDrop).toBeLessThan(BOMB_BYTES / 2);
    expectNothingLeftIn(cacheDir());
    expect(existsSync(join(cacheDir(), digest.replace(":", "-")))).toBe(false);
    const failed = recorded.events.find((e) => e.type === "image" && e.image === `oci:${reference}` && e.phase === "failed") as Extract<SandboxEvent, { type: "image" }> | undefined;
    expect(failed?.detail).toStartWith("IMAGE_TOO_LARGE: ");
    const listed = (await f.client.images.list()).images.find((image) => image.image === `oci:${reference}`);
    expect(listed).toMatchObject({ status: "failed", detail: expect.stringContaining("IMAGE_TOO_LARGE") });
    expect((await f.client.vms.list()).vms.filter((vm) => vm.rootSessionID === "ses_bomb")).toEqual([]);
  }, 300_000);

  test("a recipe build whose copy of the built-in image alone is past the limit → stopped while copying, partial removed, 413; no VM", async () => {
    await f.client.settings.patch({ maxImageMib: 256 });
    try {
      await f.client.sandbox.set("ses_big_build", { image: { kind: "recipe", packages: ["jq"] } });
      const { result, maxDrop } = await withDiskWatch(() => f.client.run("ses_big_build", { command: "true", cwd: f.services.sessions.require("ses_big_build").directory }));
      expect(result).toBeInstanceOf(ImageTooLargeError);
      expect(maxDrop).toBeLessThan(700 * MIB); // less than the built-in image: the copy stopped before it was whole
      expectNothingLeftIn(cacheDir());
      expect((await f.client.vms.list()).vms.filter((vm) => vm.rootSessionID === "ses_big_build")).toEqual([]);
    } finally {
      await f.client.settings.patch({ maxImageMib: LIMIT_MIB });
    }
  }, 300_000);
});
