// What an unmount's error names when the mount is busy: a process of ours with its working directory and an
// open file under the directory, and a directory with nothing in it holding nothing.
import { afterEach, describe, expect, test } from "bun:test";
import { closeSync, mkdirSync, openSync, rmSync, writeFileSync } from "node:fs";
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
    // sleep has its cwd in the directory and the file open as its stdin (spawn returns once it has exec'd).
    const file = openSync(join(dir, "held", "file"), "r");
    holder = Bun.spawn(["sleep", "60"], { cwd: join(dir, "held"), stdin: file, stdout: "ignore" });
    closeSync(file);
    const holders = mountHolders(join(dir, "held"));
    expect(holders).toContain(`pid ${holder.pid} (sleep): cwd, fd 0`);
    expect(mountHolders(join(dir, "free"))).toEqual([]);
  });
});
