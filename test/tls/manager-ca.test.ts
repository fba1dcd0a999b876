// The manager CA: created with tight modes, reloaded unchanged, leaves that openssl verifies, a cache
// that shares mints, rotation, crash-safe replacement, and a corrupt CA as a one-line startup error of
// the real manager process.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, cpSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { caPaths } from "../../app/tls/ca-files";
import { loadOrCreateManagerCa, ManagerCaError, type LeafCertificate } from "../../app/tls/manager-ca";
import { makeTempDir } from "../helpers";
import { createClient } from "../../sdk/index";
import { runManagerToExit, startManager } from "../manager-process";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = makeTempDir("ss-ca-");
  dirs.push(dir);
  return dir;
}

function openssl(args: string[], stdin?: string): { exitCode: number; out: string } {
  const result = Bun.spawnSync(["openssl", ...args], { stdin: stdin === undefined ? "ignore" : Buffer.from(stdin), stdout: "pipe", stderr: "pipe" });
  return { exitCode: result.exitCode, out: result.stdout.toString() + result.stderr.toString() };
}

/** `openssl verify` of a leaf against exactly one CA file, for TLS servers. */
function verify(caPem: string, leaf: LeafCertificate, purpose = "sslserver"): { exitCode: number; out: string } {
  const dir = dataDir();
  writeFileSync(join(dir, "ca.pem"), caPem);
  writeFileSync(join(dir, "leaf.pem"), leaf.certPem);
  return openssl(["verify", "-purpose", purpose, "-CAfile", join(dir, "ca.pem"), join(dir, "leaf.pem")]);
}

const text = (pem: string) => openssl(["x509", "-noout", "-text"], pem).out;

describe("manager CA", () => {
  test("first start → ca/ 0700 with ca.key 0600 (PKCS#8) and ca.crt; a restart loads the same CA", async () => {
    const data = dataDir();
    const ca = await loadOrCreateManagerCa(data);
    const paths = caPaths(data);
    expect(statSync(paths.dir).mode & 0o777).toBe(0o700);
    expect(statSync(paths.key).mode & 0o777).toBe(0o600);
    expect(readFileSync(paths.key, "utf8")).toStartWith("-----BEGIN PRIVATE KEY-----\n");
    expect(readFileSync(paths.cert, "utf8")).toBe(ca.certPem());
    expect(readdirSync(paths.dir).sort()).toEqual(["ca.crt", "ca.key"]);
    const again = await loadOrCreateManagerCa(data);
    expect(again.fingerprint()).toBe(ca.fingerprint());
    expect(again.certPem()).toBe(ca.certPem());
  });

  test("the CA certificate → CA:TRUE pathlen 0, keyCertSign, P-256, 10 years; fingerprint as openssl prints it", async () => {
    const ca = await loadOrCreateManagerCa(dataDir());
    const details = text(ca.certPem());
    expect(details).toMatch(/Basic Constraints: critical\s+CA:TRUE, pathlen:0/);
    expect(details).toMatch(/Key Usage: critical\s+Certificate Sign, CRL Sign/);
    expect(details).toContain("NIST CURVE: P-256");
    expect(details).toMatch(/Subject: CN = session-sandbox manager CA [0-9a-f]{8}, O = session-sandbox/);
    expect(openssl(["x509", "-noout", "-fingerprint", "-sha256"], ca.certPem()).out.trim()).toBe(`sha256 Fingerprint=${ca.fingerprint()}`);
    const years = (ca.notAfter() - Date.now()) / (365 * 24 * 3600_000);
    expect(years).toBeGreaterThan(9.9);
    expect(years).toBeLessThan(10.1);
  });

  test("leafFor(host) → openssl verifies it against the CA as a TLS server; SAN and CN are the host; 24 h, backdated 1 h", async () => {
    const data = dataDir();
    const ca = await loadOrCreateManagerCa(data);
    const before = Date.now();
    const leaf = await ca.leafFor("API.Example.com.");
    expect(verify(ca.certPem(), leaf)).toEqual({ exitCode: 0, out: expect.stringContaining(": OK") });
    const details = text(leaf.certPem);
    expect(details).toMatch(/Subject Alternative Name:\s+DNS:api\.example\.com\n/);
    expect(details).toContain("Subject: CN = api.example.com");
    expect(details).toMatch(/Basic Constraints: critical\s+CA:FALSE/);
    expect(details).toMatch(/Extended Key Usage:\s+TLS Web Server Authentication/);
    expect(details).toContain("NIST CURVE: P-256");
    expect(leaf.notAfter).toBeGreaterThan(before + 24 * 3600_000 - 2_000);
    expect(leaf.notAfter).toBeLessThan(before + 24 * 3600_000 + 2_000);
    const notBefore = Date.parse(openssl(["x509", "-noout", "-startdate"], leaf.certPem).out.trim().replace("notBefore=", ""));
    expect(Math.abs(notBefore - (before - 3600_000))).toBeLessThan(2_000);
    // The key is the certificate's own, not the CA's.
    expect(openssl(["pkey", "-pubout"], leaf.keyPem).out).toBe(openssl(["x509", "-noout", "-pubkey"], leaf.certPem).out);
    expect(leaf.keyPem).not.toBe(readFileSync(caPaths(data).key, "utf8"));
  });

  test("leafFor(IP literal) → an iPAddress SAN, IPv6 with or without brackets", async () => {
    const ca = await loadOrCreateManagerCa(dataDir());
    expect(text((await ca.leafFor("127.0.0.1")).certPem)).toMatch(/Subject Alternative Name:\s+IP Address:127\.0\.0\.1\n/);
    const v6 = await ca.leafFor("[::1]");
    expect(text(v6.certPem)).toMatch(/Subject Alternative Name:\s+IP Address:0:0:0:0:0:0:0:1\n/);
    expect(await ca.leafFor("::1")).toBe(v6);
    expect(verify(ca.certPem(), v6).exitCode).toBe(0);
  });

  test("leafFor of a name no certificate can carry → rejected", async () => {
    const ca = await loadOrCreateManagerCa(dataDir());
    for (const bad of ["", "a b", "evil.com/x", "-x.com", "a..b", `${"a".repeat(64)}.com`, "CN=x,O=y"]) {
      const error = await ca.leafFor(bad).catch((e: Error) => e);
      expect({ bad, message: (error as Error).message }).toEqual({ bad, message: expect.stringContaining("is not a DNS name or IP address") });
    }
  });

  test("leafFor twice → the same leaf; concurrent calls for one host → one mint; another host → its own", async () => {
    const ca = await loadOrCreateManagerCa(dataDir());
    const concurrent = await Promise.all([ca.leafFor("a.example"), ca.leafFor("a.example"), ca.leafFor("A.EXAMPLE")]);
    expect(concurrent[1]).toBe(concurrent[0]);
    expect(concurrent[2]).toBe(concurrent[0]);
    expect(await ca.leafFor("a.example")).toBe(concurrent[0]);
    expect((await ca.leafFor("b.example")).certPem).not.toBe(concurrent[0].certPem);
  });

  test("a cached leaf within 1 h of its end → a fresh one is minted (one mint for concurrent callers)", async () => {
    const clock = { now: Date.now() };
    const ca = await loadOrCreateManagerCa(dataDir(), { now: () => clock.now });
    const first = await ca.leafFor("renew.example");
    clock.now += 22 * 3600_000;
    expect(await ca.leafFor("renew.example")).toBe(first);
    clock.now += 1.5 * 3600_000;
    const [a, b] = await Promise.all([ca.leafFor("renew.example"), ca.leafFor("renew.example")]);
    expect(a).not.toBe(first);
    expect(b).toBe(a);
    expect(a.notAfter).toBeGreaterThan(first.notAfter);
  });

  test("rotate → a new key and fingerprint, files replaced; an old leaf no longer verifies; a restart loads the new CA", async () => {
    const data = dataDir();
    const ca = await loadOrCreateManagerCa(data);
    const oldPem = ca.certPem();
    const oldKey = readFileSync(caPaths(data).key, "utf8");
    const oldLeaf = await ca.leafFor("rotated.example");
    await ca.rotate();
    expect(ca.certPem()).not.toBe(oldPem);
    expect(readFileSync(caPaths(data).key, "utf8")).not.toBe(oldKey);
    expect(readFileSync(caPaths(data).cert, "utf8")).toBe(ca.certPem());
    expect(statSync(caPaths(data).key).mode & 0o777).toBe(0o600);
    expect(readdirSync(caPaths(data).dir).sort()).toEqual(["ca.crt", "ca.key"]);
    const newLeaf = await ca.leafFor("rotated.example");
    expect(newLeaf).not.toBe(oldLeaf);
    expect(verify(ca.certPem(), newLeaf).exitCode).toBe(0);
    const stale = verify(ca.certPem(), oldLeaf);
    expect(stale.exitCode).not.toBe(0);
    expect(stale.out).toContain("unable to get local issuer certificate");
    expect((await loadOrCreateManagerCa(data)).fingerprint()).toBe(ca.fingerprint());
  });

  test("rotations at once → each completes, the files hold the last one", async () => {
    const data = dataDir();
    const ca = await loadOrCreateManagerCa(data);
    const seen = new Set<string>();
    await Promise.all([0, 1, 2].map(() => ca.rotate().then(() => seen.add(ca.fingerprint()))));
    expect((await loadOrCreateManagerCa(data)).fingerprint()).toBe(ca.fingerprint());
    expect(seen.has(ca.fingerprint())).toBe(true);
  });

  test("a crash during a rotation: before the key was renamed → the old CA; after → the new one, completed", async () => {
    const data = dataDir();
    const paths = caPaths(data);
    const original = await loadOrCreateManagerCa(data);
    // A whole second pair, as a rotation writes it before renaming anything.
    const other = dataDir();
    const next = await loadOrCreateManagerCa(other);
    const nextPaths = caPaths(other);

    cpSync(nextPaths.key, `${paths.key}.new`);
    cpSync(nextPaths.cert, `${paths.cert}.new`);
    writeFileSync(`${paths.key}.new.tmp-abc`, "half a key");
    expect((await loadOrCreateManagerCa(data)).fingerprint()).toBe(original.fingerprint());
    expect(readdirSync(paths.dir).sort()).toEqual(["ca.crt", "ca.key"]);

    cpSync(nextPaths.key, paths.key);
    cpSync(nextPaths.cert, `${paths.cert}.new`);
    expect((await loadOrCreateManagerCa(data)).fingerprint()).toBe(next.fingerprint());
    expect(readdirSync(paths.dir).sort()).toEqual(["ca.crt", "ca.key"]);
  });

  test("a key loosened by hand → tightened back to 0600 at load", async () => {
    const data = dataDir();
    await loadOrCreateManagerCa(data);
    chmodSync(caPaths(data).key, 0o644);
    await loadOrCreateManagerCa(data);
    expect(statSync(caPaths(data).key).mode & 0o777).toBe(0o600);
  });

  const broken: [string, (data: string) => void, RegExp][] = [
    ["a truncated key", (data) => writeFileSync(caPaths(data).key, readFileSync(caPaths(data).key, "utf8").slice(0, 80)), /private key .*ca\.key is corrupt/],
    ["a missing certificate", (data) => rmSync(caPaths(data).cert), /certificate .*ca\.crt cannot be read \(it is missing\)/],
    ["a certificate of another CA", (data) => writeFileSync(caPaths(data).cert, readFileSync(join(data, "other.crt"))), /ca\.crt does not belong to its private key .*ca\.key/],
    ["a directory where the key was", (data) => (rmSync(caPaths(data).key), Bun.spawnSync(["mkdir", caPaths(data).key])), /ca\.key cannot be read \(it is not a regular file\)/],
  ];
  for (const [what, damage, message] of broken) {
    test(`${what} → ManagerCaError naming the file and the fix; nothing is replaced`, async () => {
      const data = dataDir();
      await loadOrCreateManagerCa(data);
      writeFileSync(join(data, "other.crt"), (await loadOrCreateManagerCa(dataDir())).certPem());
      damage(data);
      const before = readdirSync(caPaths(data).dir).sort();
      const error = await loadOrCreateManagerCa(data).catch((e: Error) => e);
      expect(error).toBeInstanceOf(ManagerCaError);
      expect((error as Error).message).toMatch(message);
      expect((error as Error).message).toContain(`mv ${caPaths(data).dir} ${caPaths(data).dir}.broken`);
      expect((error as Error).message).toContain("bun run ca rotate");
      expect(readdirSync(caPaths(data).dir).sort()).toEqual(before);
    });
  }

  test("the real manager with a corrupt CA key → exit 78, one line on stderr naming the file and the fix", async () => {
    const data = dataDir();
    dirs.push(`${data}-runtime`);
    await loadOrCreateManagerCa(data);
    writeFileSync(caPaths(data).key, "-----BEGIN PRIVATE KEY-----\nnot base64 at all\n-----END PRIVATE KEY-----\n");
    const { exitCode, stderr } = await runManagerToExit(data);
    expect(exitCode).toBe(78);
    const lines = stderr.split("\n").filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toStartWith(`session-sandbox: cannot start: the manager CA's private key ${caPaths(data).key} is corrupt`);
    expect(lines[0]).toContain(`move it aside (mv ${caPaths(data).dir} ${caPaths(data).dir}.broken)`);
    expect(existsSync(caPaths(data).key)).toBe(true);
  });

  test("the real manager: first start creates the CA and GET /api/ca shows it; a restart keeps it", async () => {
    const data = dataDir();
    dirs.push(`${data}-runtime`);
    const fingerprints: string[] = [];
    for (let start = 0; start < 2; start++) {
      const manager = await startManager(data, { SANDBOX_RUNTIME: "msb" }); // no VM needed: nothing to boot
      try {
        const view = await createClient({ url: manager.url, token: manager.token }).ca.get();
        expect(view.certificatePem).toBe(readFileSync(caPaths(data).cert, "utf8"));
        fingerprints.push(view.fingerprint);
      } finally {
        await manager.stop();
      }
    }
    expect(fingerprints[1]).toBe(fingerprints[0]!);
    expect(statSync(caPaths(data).key).mode & 0o777).toBe(0o600);
  }, 60_000);
});
