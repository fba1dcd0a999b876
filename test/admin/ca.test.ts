// `bun run ca [rotate]` end to end: the real manager process (no VM needed), the script as an operator
// runs it, checked against the CA files the manager keeps and against openssl.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { caPaths } from "../../app/tls/ca-files";
import { parseJson, startAdminManager, type AdminManager } from "./fixture";

type CaJson = { fingerprint: string; notAfter: string; certificatePem: string; previousFingerprint?: string };

let m: AdminManager;
beforeAll(async () => {
  m = await startAdminManager();
}, 120_000);
afterAll(async () => m?.cleanup(), 120_000);

const opensslFingerprint = (pem: string) =>
  Bun.spawnSync(["openssl", "x509", "-noout", "-fingerprint", "-sha256"], { stdin: Buffer.from(pem), stdout: "pipe" }).stdout.toString().trim().replace("sha256 Fingerprint=", "");

describe("bun run ca", () => {
  test("piped → the fingerprint as openssl prints it and the expiry; --pem → the certificate on disk", async () => {
    const onDisk = readFileSync(caPaths(m.dataDir).cert, "utf8");
    const result = await m.run("ca");
    expect(result).toMatchObject({ exitCode: 0, stderr: "" });
    expect(result.stdout).toMatch(/^FINGERPRINT {2}sha256 ([0-9A-F]{2}:){31}[0-9A-F]{2}\nEXPIRES {6}\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n$/);
    expect(result.stdout).toContain(opensslFingerprint(onDisk));
    expect(await m.run("ca", ["--pem"])).toEqual({ exitCode: 0, stdout: onDisk, stderr: "" });
  });

  test("rotate → a new CA on disk, old → new fingerprints named; --json → stable keys", async () => {
    const before = parseJson<CaJson>(await m.run("ca", ["--json"]));
    const result = await m.run("ca", ["rotate"]);
    expect(result).toMatchObject({ exitCode: 0, stderr: "" });
    const onDisk = readFileSync(caPaths(m.dataDir).cert, "utf8");
    const after = opensslFingerprint(onDisk);
    expect(after).not.toBe(before.fingerprint);
    expect(result.stdout).toStartWith(`rotated the manager CA: sha256 ${before.fingerprint} → ${after}\n`);
    const json = parseJson<CaJson>(await m.run("ca", ["rotate", "--json"]));
    expect(Object.keys(json).sort()).toEqual(["certificatePem", "fingerprint", "notAfter", "previousFingerprint"]);
    expect(json.previousFingerprint).toBe(after);
    expect(json.certificatePem).toBe(readFileSync(caPaths(m.dataDir).cert, "utf8"));
    expect(json.notAfter).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  test("an unknown action or --pem with rotate → usage error (exit 2), nothing rotated", async () => {
    const before = readFileSync(caPaths(m.dataDir).cert, "utf8");
    for (const args of [["renew"], ["rotate", "--pem"], ["rotate", "now"]]) {
      const result = await m.run("ca", args);
      expect({ args, exitCode: result.exitCode, stdout: result.stdout }).toEqual({ args, exitCode: 2, stdout: "" });
      expect(result.stderr).toStartWith("ca: ");
    }
    expect(readFileSync(caPaths(m.dataDir).cert, "utf8")).toBe(before);
  });
});
