// /api/ca through the typed SDK, in-process: the certificate and its fingerprint, a rotation, and a
// rotation whose files cannot be written (a real failure: a directory where the new key must go).
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { caPaths } from "../../app/tls/ca-files";
import { CaRotationFailedError } from "../../sdk/index";
import { makeTestApp, type TestApp } from "../helpers";

let t: TestApp;
afterEach(() => t?.cleanup());

function fingerprintOf(pem: string): string {
  const out = Bun.spawnSync(["openssl", "x509", "-noout", "-fingerprint", "-sha256"], { stdin: Buffer.from(pem), stdout: "pipe" }).stdout.toString();
  return out.trim().replace("sha256 Fingerprint=", "");
}

describe("/api/ca", () => {
  test("GET → the CA certificate on disk, its fingerprint as openssl prints it, its expiry; no key", async () => {
    t = makeTestApp();
    const view = await t.client.ca.get();
    expect(view.certificatePem).toBe(readFileSync(caPaths(t.dataDir).cert, "utf8"));
    expect(view.fingerprint).toBe(fingerprintOf(view.certificatePem));
    expect(view.notAfter).toBeGreaterThan(Date.now() + 9 * 365 * 24 * 3600_000);
    expect(JSON.stringify(view)).not.toContain("PRIVATE KEY");
  });

  test("POST /rotate → a new CA on disk and in GET, the previous fingerprint named, one log line", async () => {
    t = makeTestApp();
    const before = await t.client.ca.get();
    const rotated = await t.client.ca.rotate();
    expect(rotated.previousFingerprint).toBe(before.fingerprint);
    expect(rotated.fingerprint).not.toBe(before.fingerprint);
    expect(rotated.certificatePem).toBe(readFileSync(caPaths(t.dataDir).cert, "utf8"));
    expect(await t.client.ca.get()).toEqual({ certificatePem: rotated.certificatePem, fingerprint: rotated.fingerprint, notAfter: rotated.notAfter });
    const logged = t.logLines.filter((line) => line.includes('"manager CA rotated"')).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(logged).toEqual([expect.objectContaining({ fingerprint: rotated.fingerprint, previousFingerprint: before.fingerprint })]);
  });

  test("POST /rotate when the new files cannot be written → 503 CA_ROTATION_FAILED with the reason; the current CA stays", async () => {
    t = makeTestApp();
    const before = await t.client.ca.get();
    mkdirSync(`${caPaths(t.dataDir).key}.new`);
    const error = await t.client.ca.rotate().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CaRotationFailedError);
    expect(error).toMatchObject({ status: 503, code: "CA_ROTATION_FAILED" });
    expect((error as Error).message).toContain("the manager CA was not rotated and the current one stays in use");
    expect((error as Error).message).toContain("ca.key.new");
    expect(await t.client.ca.get()).toEqual(before);
    expect(readFileSync(caPaths(t.dataDir).cert, "utf8")).toBe(before.certificatePem);
    expect(readdirSync(caPaths(t.dataDir).dir).sort()).toEqual(["ca.crt", "ca.key", "ca.key.new"]);
  });
});
