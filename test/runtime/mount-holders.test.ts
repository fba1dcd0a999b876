// What an unmount's error names when the mount is busy: a process of ours with its working directory and an
// open file under the directory, and a directory with nothing in it holding nothing.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { mountHolders } from "../../runtime/local/mount-holders";
import { makeTempDir } from "../helpers";

let dir: string | undefined;
let holder: ReturnType<typeof Bun.spawn> | undefined;
afterEach(async () => {
  holder?.kill(9);
  await holder?.exited;
  holder = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("mount holders", () => {
  test("a process with its cwd and an open file under the directory → named with both; a sibling directory → nothing", async () => {
    dir = makeTempDir("ss-mount-holders-");
    mkdirSync(join(dir, "held"));
    mkdirSync(join(dir, "free"));
    writeFileSync(join(dir, "held", "file"), "x");
    // sh keeps the file open on fd 3 and its cwd in the directory while it sleeps.
    holder = Bun.spawn(["sh", "-c", "exec 3<file; echo ready; exec sleep 60 3<&3"], { cwd: join(dir, "held"), stdout: "pipe" });
    const reader = (holder.stdout as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    const holders = mountHolders(join(dir, "held"));
    expect(holders).toContain(`pid ${holder.pid} (sleep): cwd, fd 3`);
    expect(mountHolders(join(dir, "free"))).toEqual([]);
  });
});
