// The SDK ships no server code: bundling sdk/ must not pull in app/ modules, bun:sqlite or node:fs.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";

describe("sdk bundle", () => {
  test("bundle sdk/index.ts → no server code inside", async () => {
    const result = await Bun.build({ entrypoints: [join(import.meta.dir, "../sdk/index.ts")], target: "browser" });
    expect(result.success).toBe(true);
    const text = await result.outputs[0]!.text();
    for (const serverOnly of ["bun:sqlite", "createApp", "openDatabase", "createSessionsService", "node:fs", "loadOrCreateToken"]) {
      expect([serverOnly, text.includes(serverOnly)]).toEqual([serverOnly, false]);
    }
    expect(text).toContain("SessionNotFoundError");
  });
});
