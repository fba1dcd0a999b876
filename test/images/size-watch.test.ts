// The watch that bounds an image build or pull while it writes (app/images/size-watch.ts): other writers on
// the same disk do not count against it; the directory's own writes past the limit do, while it runs.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ImageSizeExceeded, runWithinSize, watchImageSize } from "../../app/images/size-watch";
import { makeTempDir } from "../helpers";

const MIB = 1024 * 1024;
let root: string;
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("image size watch", () => {
  test("the disk losing more than the limit to another writer → not exceeded; the directory itself past it → exceeded once", async () => {
    root = makeTempDir("ss-size-watch-");
    const dir = join(root, "work");
    mkdirSync(dir);
    const seen: number[] = [];
    const watch = watchImageSize(dir, root, 32 * MIB, (bytes) => seen.push(bytes));
    try {
      writeFileSync(join(root, "someone-else"), Buffer.alloc(64 * MIB, 1));
      await Bun.sleep(800);
      expect(seen).toEqual([]);
      writeFileSync(join(dir, "image-layer"), Buffer.alloc(48 * MIB, 1));
      for (let i = 0; i < 50 && seen.length === 0; i++) await Bun.sleep(100);
      expect(seen).toHaveLength(1);
      expect(seen[0]).toBeGreaterThan(32 * MIB);
      expect(watch.measuredPeak()).toBe(seen[0]!);
    } finally {
      watch.stop();
    }
  });

  test("a tool writing past the limit → killed while it writes (not left to finish), ImageSizeExceeded", async () => {
    root = makeTempDir("ss-size-watch-");
    const dir = join(root, "work");
    mkdirSync(dir);
    // 64 MiB a second for 60 s: it finishes only if nothing stops it.
    const script = `for i in $(seq 1 120); do head -c ${32 * MIB} /dev/urandom > ${dir}/part-$i; sleep 0.5; done; echo finished`;
    const error = await runWithinSize(["sh", "-c", script], undefined, { dir, fsPath: root, limitBytes: 64 * MIB }).catch((e: Error) => e);
    expect(error).toBeInstanceOf(ImageSizeExceeded);
    expect((error as ImageSizeExceeded).reachedBytes).toBeGreaterThan(64 * MIB);
    const written = readdirSync(dir).length;
    await Bun.sleep(1_500);
    expect(readdirSync(dir).length).toBe(written); // nothing writes any more: the tool was killed
    expect(written).toBeLessThan(120);
  }, 60_000);
});
