// The published SDK's types are generated from the OpenAPI document (scripts/generate-sdk-types.ts); a
// change to a route schema without `bun run sdk:types` would ship stale types. tsc (test/types/sdk-contract.ts)
// holds the generated types and the server's to each other; this holds the committed file to the generator.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "../..");

describe("sdk/generated/openapi.d.ts", () => {
  test("is what `bun run sdk:types` generates from today's route schemas", async () => {
    const proc = Bun.spawn(["bun", join(ROOT, "scripts/generate-sdk-types.ts"), "--check"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
    const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
    expect({ code, stdout, stderr }).toEqual({ code: 0, stdout: "sdk/generated/openapi.d.ts is up to date\n", stderr: "" });
  });
});
