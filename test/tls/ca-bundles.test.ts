// The trust directory per image: the bundle (the manager CA first, then the image's own store copied as
// bytes — read only inside the image, symlinks resolved there, a regular file of bounded size) and the
// manager CA alone; and where the local driver mounts them. Images here are small directories made by the test; a hostile one is just a directory too.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createCaBundles, MAX_SYSTEM_STORE_BYTES, readSystemStore } from "../../app/tls/ca-bundles";
import { loadOrCreateManagerCa, type ManagerCa } from "../../app/tls/manager-ca";
import { GUEST_CA_BUNDLE, GUEST_SYSTEM_CA_BUNDLE, GUEST_TRUST_DIR, TRUST_BUNDLE_FILE, TRUST_MANAGER_CA_FILE, type VmSpec } from "../../runtime/driver";
import { trustMounts } from "../../runtime/local/trust-mounts";
import { planGuestRoot } from "../../runtime/local/guest-root";
import { caBundleEnv } from "../../runtime/tiers/embedded";
import { makeTempDir } from "../helpers";

const ROOTS = "-----BEGIN CERTIFICATE-----\nimage root\n-----END CERTIFICATE-----\n";
let work: string;
let ca: ManagerCa;
beforeAll(async () => {
  work = makeTempDir("ss-ca-bundles-");
  ca = await loadOrCreateManagerCa(join(work, "data"));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

let count = 0;
/** A minimal image; `store` decides what its /etc/ssl/certs/ca-certificates.crt is. */
function image(store: (certs: string, root: string) => void = (certs) => writeFileSync(join(certs, "ca-certificates.crt"), ROOTS)): string {
  const root = join(work, `image${++count}`);
  const certs = join(root, "etc/ssl/certs");
  mkdirSync(certs, { recursive: true });
  for (const dir of ["usr/bin", "tmp", "run"]) mkdirSync(join(root, dir), { recursive: true });
  store(certs, root);
  return root;
}

const bundles = (dir = join(work, `bundles${++count}`)) => ({ dir, bundles: createCaBundles({ dir, ca, storeRootFor: (img) => img }) });

describe("readSystemStore (hostile images)", () => {
  test("a regular file → its bytes", () => {
    expect(readSystemStore(image())?.toString()).toBe(ROOTS);
  });

  test("a symlink inside the image → followed there; one climbing out or to an absolute host path → the image's own file or nothing", () => {
    const secret = join(work, "host-secret");
    writeFileSync(secret, "host file");
    expect(readSystemStore(image((certs, root) => (writeFileSync(join(root, "etc/roots.pem"), ROOTS), symlinkSync("../../roots.pem", join(certs, "ca-certificates.crt")))))?.toString()).toBe(ROOTS);
    expect(readSystemStore(image((certs) => symlinkSync(`../../../../../../../..${secret}`, join(certs, "ca-certificates.crt"))))).toBeUndefined();
    expect(readSystemStore(image((certs) => symlinkSync(secret, join(certs, "ca-certificates.crt"))))).toBeUndefined();
    expect(readSystemStore(image((certs) => symlinkSync("/etc/ssl/certs/ca-certificates.crt", join(certs, "ca-certificates.crt"))))).toBeUndefined();
  });

  test("a FIFO, a directory, a missing file, an oversized file → nothing (and no hang)", () => {
    expect(readSystemStore(image((certs) => Bun.spawnSync(["mkfifo", join(certs, "ca-certificates.crt")])))).toBeUndefined();
    expect(readSystemStore(image((certs) => mkdirSync(join(certs, "ca-certificates.crt"))))).toBeUndefined();
    expect(readSystemStore(image(() => {}))).toBeUndefined();
    expect(readSystemStore(image((certs) => writeFileSync(join(certs, "ca-certificates.crt"), Buffer.alloc(MAX_SYSTEM_STORE_BYTES + 1, 65))))).toBeUndefined();
    expect(readSystemStore(image((certs) => writeFileSync(join(certs, "ca-certificates.crt"), Buffer.alloc(MAX_SYSTEM_STORE_BYTES, 65))))?.length).toBe(MAX_SYSTEM_STORE_BYTES);
  });
});

const bundleOf = (trustDir: string) => readFileSync(join(trustDir, TRUST_BUNDLE_FILE), "utf8");

describe("trust directories", () => {
  test("forImage → a 0755 dir: the bundle (manager CA, then the image's roots) and the manager CA alone, 0644; again → the same dir", () => {
    const img = image();
    const { dir, bundles: b } = bundles();
    const path = b.forImage(img);
    expect(bundleOf(path)).toBe(`${ca.certPem()}\n${ROOTS}\n`);
    expect(readFileSync(join(path, TRUST_MANAGER_CA_FILE), "utf8")).toBe(ca.certPem());
    expect(readdirSync(path).sort()).toEqual([TRUST_BUNDLE_FILE, TRUST_MANAGER_CA_FILE]);
    for (const file of [TRUST_BUNDLE_FILE, TRUST_MANAGER_CA_FILE]) expect(statSync(join(path, file)).mode & 0o777).toBe(0o644);
    expect(statSync(path).mode & 0o777).toBe(0o755);
    expect(statSync(dir).mode & 0o777).toBe(0o711);
    expect(b.forImage(img)).toBe(path);
    expect(readdirSync(dir)).toEqual([path.split("/").at(-1)!]);
  });

  test("the operator's private CAs (SANDBOX_EXTRA_CA_FILE) → after the manager CA in both files, before the image's roots; another set → another dir", () => {
    const img = image();
    const privateCa = "-----BEGIN CERTIFICATE-----\nprivate CA\n-----END CERTIFICATE-----";
    const dir = join(work, "bundles-extra");
    const path = createCaBundles({ dir, ca, extraCas: [privateCa], storeRootFor: (root) => root }).forImage(img);
    expect(bundleOf(path)).toBe(`${ca.certPem()}${privateCa}\n\n${ROOTS}\n`);
    expect(readFileSync(join(path, TRUST_MANAGER_CA_FILE), "utf8")).toBe(`${ca.certPem()}${privateCa}\n`);
    expect(createCaBundles({ dir, ca, storeRootFor: (root) => root }).forImage(img)).not.toBe(path);
  });

  test("an image without a usable store → the manager CA alone; two such images share one dir", () => {
    const { bundles: b } = bundles();
    const bare = b.forImage(image(() => {}));
    expect(bundleOf(bare)).toBe(ca.certPem());
    expect(b.forImage(image((certs) => mkdirSync(join(certs, "ca-certificates.crt"))))).toBe(bare);
  });

  test("msb: the host's own store stands in for the image's", () => {
    const dir = join(work, "bundles-msb");
    const path = createCaBundles({ dir, ca, storeRootFor: () => "/" }).forImage("debian:bookworm-slim");
    expect(bundleOf(path)).toBe(`${ca.certPem()}\n${readFileSync(GUEST_SYSTEM_CA_BUNDLE, "utf8")}\n`);
  });

  test("a rotated CA → a new dir (the old one stays for running VMs); removeAll → every dir goes, the next use writes again", async () => {
    const own = await loadOrCreateManagerCa(join(work, "rotating"));
    const dir = join(work, "bundles-rotating");
    const b = createCaBundles({ dir, ca: own, storeRootFor: (img) => img });
    const img = image();
    const before = b.forImage(img);
    await own.rotate();
    const after = b.forImage(img);
    expect(after).not.toBe(before);
    expect(bundleOf(after)).toStartWith(own.certPem());
    expect(readFileSync(join(after, TRUST_MANAGER_CA_FILE), "utf8")).toBe(own.certPem());
    expect(readdirSync(dir).sort()).toEqual([before, after].map((p) => p.split("/").at(-1)!).sort());
    expect(b.removeAll().length).toBe(2);
    expect(readdirSync(dir)).toEqual([]);
    expect(b.forImage(img)).toBe(after);
    expect(bundleOf(after)).toStartWith(own.certPem());
  });

  test("a rebuilt image store at the same path → a new dir", () => {
    const img = image();
    const { bundles: b } = bundles();
    const first = b.forImage(img);
    writeFileSync(join(img, GUEST_SYSTEM_CA_BUNDLE), ROOTS + ROOTS);
    expect(b.forImage(img)).not.toBe(first);
  });

  test("the variables: a whole store for four, the manager CA alone for Node (it adds it to its own roots)", () => {
    expect(caBundleEnv()).toEqual({
      SSL_CERT_FILE: GUEST_CA_BUNDLE,
      NODE_EXTRA_CA_CERTS: "/run/session-sandbox/manager-ca.crt",
      REQUESTS_CA_BUNDLE: GUEST_CA_BUNDLE,
      GIT_SSL_CAINFO: GUEST_CA_BUNDLE,
      CURL_CA_BUNDLE: GUEST_CA_BUNDLE,
    });
  });
});

describe("local driver: the trust directory's mounts", () => {
  const spec = (img: string, trustDir?: string): VmSpec => ({
    name: "unit-vm", image: img, cpus: 1, memoryMib: 256, mounts: [], tmpSizeMib: 16, volume: { name: "unit-vol" }, labels: {}, network: { mode: "none" }, ...(trustDir ? { trustDir } : {}),
  });
  const mountsOf = (img: string, trustDir?: string) => trustMounts(spec(img, trustDir), planGuestRoot(img, [])).map((m) => [m.destination, m.source, m.options?.join(",")]);
  const dirRo = "bind,ro,nosuid,nodev,noexec";
  const fileRo = "bind,ro,nosuid,nodev";

  test("an image with a store → the dir read-only at /run/session-sandbox, its bundle over the store; none without a trust dir", () => {
    const img = image();
    expect(mountsOf(img, "/t")).toEqual([[GUEST_TRUST_DIR, "/t", dirRo], [GUEST_SYSTEM_CA_BUNDLE, "/t/ca-certificates.crt", fileRo]]);
    expect(mountsOf(img)).toEqual([]);
  });

  test("a store that is a symlink → mounted where it leads; one leading into the VM's own /run or /tmp, or missing → the dir only", () => {
    const linked = image((certs, root) => (writeFileSync(join(root, "etc/roots.pem"), ROOTS), symlinkSync("/etc/roots.pem", join(certs, "ca-certificates.crt"))));
    expect(mountsOf(linked, "/t")).toEqual([[GUEST_TRUST_DIR, "/t", dirRo], ["/etc/roots.pem", "/t/ca-certificates.crt", fileRo]]);
    const intoTmp = image((certs, root) => (writeFileSync(join(root, "tmp/roots.pem"), ROOTS), symlinkSync("/tmp/roots.pem", join(certs, "ca-certificates.crt"))));
    expect(mountsOf(intoTmp, "/t")).toEqual([[GUEST_TRUST_DIR, "/t", dirRo]]);
    expect(mountsOf(image(() => {}), "/t")).toEqual([[GUEST_TRUST_DIR, "/t", dirRo]]);
  });
});
