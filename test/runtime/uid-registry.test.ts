// The host-wide uid range registry as a plain module: claims are exclusive, and what a killed claimer
// left half-done (its temp file) is cleaned up by the next claim.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { UidRegistry } from "../../runtime/local/uid-registry";
import { makeTempDir } from "../helpers";

const root = makeTempDir("ss-uid-registry-");
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("uid registry", () => {
  test("a claim killed mid-way (kill -9 leaves .claim-<pid>-…) → removed by the next claim; a live process's temp stays", () => {
    const dir = join(root, "ranges");
    mkdirSync(dir, { recursive: true });
    const deadPid = 2 ** 22 + 12345; // above pid_max's default: no such process
    writeFileSync(join(dir, `.claim-${deadPid}-abc`), "");
    writeFileSync(join(dir, `.claim-${process.pid}-live`), "");
    const registry = new UidRegistry(dir, join(root, "state-a"));
    expect(registry.claim("vol-a", 1 << 30)).toBe(true);
    expect(existsSync(join(dir, `.claim-${deadPid}-abc`))).toBe(false);
    expect(existsSync(join(dir, `.claim-${process.pid}-live`))).toBe(true);
    expect(new UidRegistry(dir, join(root, "state-b")).claim("vol-b", 1 << 30)).toBe(false);
    registry.release("vol-a", 1 << 30);
    expect(registry.ownClaims()).toEqual([]);
  });
});
