// What SANDBOX_EXTRA_CA_FILE adds: roots for intercepted upstreams (with the host's store), and the same
// CAs alone for the guests' trust directories.
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadUpstreamRoots, UpstreamRootsError } from "../../app/tls/upstream-roots";
import { makeTestPki } from "../fixtures/test-pki";

const pki = makeTestPki("session-sandbox upstream-roots test CA");
afterAll(() => pki.cleanup());

describe("loadUpstreamRoots", () => {
  test("no extra file → the host's store, nothing for the guests", () => {
    const { roots, extra } = loadUpstreamRoots(undefined);
    expect(roots.length).toBeGreaterThan(100);
    expect(extra).toEqual([]);
  });

  test("an extra file → its CAs after the host's store, and the same CAs for the guests", () => {
    const { roots, extra, source } = loadUpstreamRoots(pki.caFile);
    expect(extra).toEqual([pki.caPem.trim()]);
    expect(roots.at(-1)).toBe(pki.caPem.trim());
    expect(source).toEndWith(`+ 1 from ${pki.caFile}`);
  });

  test("a file without a certificate → refused with the fix", () => {
    const empty = join(pki.caFile, "..", "empty.pem");
    writeFileSync(empty, "not a certificate\n");
    expect(() => loadUpstreamRoots(empty)).toThrow(UpstreamRootsError);
    expect(() => loadUpstreamRoots(empty)).toThrow("holds no PEM certificate (-----BEGIN CERTIFICATE-----): give the CA certificate in PEM form");
  });
});
