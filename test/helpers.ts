// Shared test wiring: a fresh app over a real SQLite file in its own temp dir, driven in-process.
import type { TierAvailability } from "../runtime/isolation";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../app/db/open";
import { createLogger } from "../app/log";
import { createManager } from "../app/manager";
import { runDoctor } from "../app/services/doctor";
import type { Credentials } from "../app/services/credentials";
import type { HostLimits } from "../app/services/host-limits";
import type { EnvDefaults } from "../app/services/settings";
import { caExists, caPaths, writeCaPair } from "../app/tls/ca-files";
import { createCaPair } from "../app/tls/certificates";
import { openManagerCa } from "../app/tls/manager-ca";
import { createClient } from "../sdk/index";

export const TEST_TOKEN = "test-token-0123456789";
export const TEST_HOST: HostLimits = { cpus: 4, memoryMib: 8192 };
/** Every isolation tier "working", for tests of the settings and overrides alone (no VM is booted). */
export const ALL_TIERS: TierAvailability = {
  container: { available: true, reason: "test" },
  gvisor: { available: true, reason: "test" },
  microvm: { available: true, reason: "test" },
};

export function makeTempDir(prefix = "ss-test-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export type TestAppOptions = {
  host?: HostLimits;
  /** The largest file upload the files API takes (default: the manager's). */
  maxUploadBytes?: number;
  envDefaults?: EnvDefaults;
  now?: () => number;
  dataDir?: string;
  /** The real local runtime: its state dir, cgroup parent and rootfs. Without it no VM is ever booted. */
  runtime?: { stateDir: string; cgroupParent: string; image: string };
  /** Instead of `runtime`: the msb driver over this binary (the stand-in msb, a FAKE: test/runtime-msb/stand-in-msb.ts). */
  msb?: { binary: string; msbHome: string };
  sharedDirs?: string[];
  credentials?: Credentials;
  /** Where extra packages of recipe images come from (a loopback apt repository in tests). */
  aptSources?: string;
  /** The roots intercepted upstreams are verified against (a test CA in tests); default: none trusted. */
  upstreamRoots?: readonly string[];
  /** CAs every VM trusts besides the manager CA (SANDBOX_EXTRA_CA_FILE's); default: none. */
  guestExtraCas?: readonly string[];
  /** Which isolation tiers "work here"; default: the runtime's own tier only (none without a runtime). */
  tiers?: TierAvailability;
};

/**
 * One manager CA per test process, written into each test app's data dir: generating one needs WebCrypto,
 * which is async, and makeTestApp is not. Each app's files are its own (a rotation changes only those).
 * Real time, not a test's clock: guests verify its leaves with their own.
 */
const TEST_CA = await createCaPair(Date.now());

function testCa(dataDir: string) {
  if (!caExists(caPaths(dataDir))) writeCaPair(caPaths(dataDir), TEST_CA);
  return openManagerCa(dataDir);
}

/** Without a probe of every tier, a test manager's tiers are those of the runtime it was given. */
const NO_TIERS: TierAvailability = {
  container: { available: false, reason: "not probed on this manager" },
  gvisor: { available: false, reason: "not probed on this manager" },
  microvm: { available: false, reason: "not probed on this manager" },
};

export function makeTestApp(options: TestAppOptions = {}) {
  const dataDir = options.dataDir ?? makeTempDir();
  const db = openDatabase(dataDir);
  const logLines: string[] = [];
  const log = createLogger("debug", (line) => logLines.push(line));
  const runtime = options.runtime;
  const build = () => createManager({
    ...(options.maxUploadBytes === undefined ? {} : { maxUploadBytes: options.maxUploadBytes }),
    db,
    host: options.host ?? TEST_HOST,
    envDefaults: options.envDefaults ?? {},
    now: options.now,
    token: TEST_TOKEN,
    log,
    version: "test",
    driver: options.msb ? { kind: "msb", msbPath: options.msb.binary, msbHome: options.msb.msbHome, viewsDir: join(options.msb.msbHome, "views") } : runtime && { kind: "local", stateDir: runtime.stateDir, rootfsDir: runtime.image, cgroupParent: runtime.cgroupParent },
    runtimeUnavailable: runtime || options.msb ? undefined : "this test runs without a runtime",
    images: { builtInRootfs: runtime?.image ?? "/nonexistent-rootfs", cacheDir: join(dataDir, "images"), defaultOciImage: "debian:bookworm-slim", aptSources: options.aptSources },
    sharedDirs: options.sharedDirs ?? [],
    egressDir: join(runtime?.stateDir ?? dataDir, "egress"),
    ca: testCa(dataDir),
    upstreamRoots: options.upstreamRoots ?? [],
    guestExtraCas: options.guestExtraCas ?? [],
    caBundleDir: join(runtime?.stateDir ?? dataDir, "ca-bundles"),
    protectedDirs: { dataDir, runtimeDir: runtime?.stateDir ?? dataDir, egressDir: join(runtime?.stateDir ?? dataDir, "egress") },
    credentials: options.credentials,
    tiers: options.tiers ?? (options.msb ? { ...NO_TIERS, microvm: { available: true, reason: "the stand-in msb" } } : runtime ? { ...NO_TIERS, container: { available: true, reason: "the local runtime" } } : NO_TIERS),
    doctor: () =>
      runDoctor({
        runtime: runtime
          ? { name: "local", available: true, version: "test", reason: "test runtime", notUsed: {} }
          : { name: null, available: false, version: null, reason: "tests run without a runtime", notUsed: {} },
        capabilities: {},
        db,
        dataDir,
        runtimeDir: runtime?.stateDir ?? dataDir,
        rootfsDir: runtime?.image ?? "/nonexistent-rootfs",
        tokenFromEnv: true,
      }),
    runtimeStatus: () =>
      runtime
        ? { name: "local", available: true, version: "test", reason: "test runtime", notUsed: {} }
        : { name: null, available: false, version: null, reason: "tests run without a runtime", notUsed: {} },
  });
  let manager: ReturnType<typeof build>;
  try {
    manager = build();
  } catch (error) {
    // A refused start (e.g. env above the host) must not leave the temp dir or the database open.
    db.close();
    if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  const { app, services, supervisor, events, metrics, egress, images, ca } = manager;
  const fetcher = ((input: string | URL | Request, init?: RequestInit) => app.handle(new Request(input as string, init))) as typeof fetch;
  const client = createClient({ url: "http://localhost", token: TEST_TOKEN, fetcher });
  /** A raw request, for inputs the typed client cannot express. */
  const request = (method: string, path: string, init: { body?: RequestInit["body"]; headers?: Record<string, string>; token?: string | null } = {}) => {
    const headers: Record<string, string> = { ...init.headers };
    if (init.token !== null) headers.authorization = `Bearer ${init.token ?? TEST_TOKEN}`;
    if (init.body !== undefined && !("content-type" in headers)) headers["content-type"] = "application/json";
    return app.handle(new Request(`http://localhost${path}`, { method, body: init.body, headers }));
  };
  const cleanup = () => {
    supervisor.close();
    void egress.closeAll();
    db.close();
    if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
  };
  return { app, db, services, supervisor, client, request, logLines, dataDir, cleanup, events, metrics, egress, images, ca };
}

export type TestApp = ReturnType<typeof makeTestApp>;

/** Every row of every table, to prove a rejected request changed nothing. */
export function snapshotDatabase(db: TestApp["db"]): string {
  const tables = db.query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all();
  return JSON.stringify(tables.map(({ name }) => [name, db.query(`SELECT * FROM "${name}" ORDER BY rowid`).all()]));
}
