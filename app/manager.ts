// Assembles the whole manager from its dependencies: services, supervisor, exec service and the HTTP
// app. main.ts feeds it the environment; tests feed it temp dirs.
import type { Database } from "bun:sqlite";
import { primaryRuntime, type DriverConfig } from "../workers/protocol";
import { createApp } from "./index";
import type { Logger } from "./log";
import type { RuntimeStatus } from "./routes/health";
import { createServices } from "./services";
import { createExecService } from "./services/exec";
import { freeDiskMib, type HostLimits } from "./services/host-limits";
import type { LifecycleEvent } from "./services/lifecycle-events";
import type { EnvDefaults } from "./services/settings";
import { createSupervisor, type Supervisor } from "./supervisor/supervisor";
import { createEventBus } from "./events/event-bus";
import { publishLifecycle } from "./events/lifecycle-publisher";
import { createMetrics, type Metrics } from "./metrics";
import type { DoctorReport } from "./services/doctor";
import { createEgressProxies } from "./services/egress-proxies";
import type { Credentials } from "./services/credentials";
import type { ProtectedDirs } from "./services/mount-deny-list";
import { createCaBundles } from "./tls/ca-bundles";
import type { ManagerCa } from "./tls/manager-ca";
import { createImagesRepo } from "./db/images-repo";
import { createImageService, imageNormalizerFor, type ImageService } from "./images/image-service";
import { sourceKeyOf } from "./images/image-choice";
import { createEgressRevocation, type EgressRevocation } from "./services/egress-revocation";
import { createSecretUsage } from "./services/secret-usage";
import { createVmStats } from "./services/vm-stats";
import { countSessions } from "./services/session-counts";
import { createDriver } from "../workers/create-driver";
import { resolveTier, TIER_OF_RUNTIME, type IsolationChoice, type IsolationTier, type TierAvailability } from "../runtime/isolation";
import { IsolationUnavailableError } from "./errors";

export type ManagerDeps = {
  db: Database;
  host: HostLimits;
  envDefaults: EnvDefaults;
  token: string;
  log: Logger;
  version: string;
  /** The chosen runtime; undefined when none is usable (commands are then refused with the reason). */
  driver: DriverConfig | undefined;
  runtimeUnavailable?: string;
  /** Guest images: the built-in rootfs, where built and pulled ones are cached, and what msb boots by default. */
  images: { builtInRootfs: string; cacheDir: string; msbDefaultImage: string; aptSources?: string };
  sharedDirs: string[];
  runtimeStatus: () => RuntimeStatus;
  doctor: () => DoctorReport;
  /** Where the per-VM egress proxy sockets live: traversable by the VMs' uids, like the runtime dir. */
  egressDir: string;
  /** The manager CA (app/tls/manager-ca.ts): every VM trusts it; the egress proxies mint leaves with it. */
  ca: ManagerCa;
  /** What an intercepted tunnel's upstream is verified against: the host's roots plus SANDBOX_EXTRA_CA_FILE (app/tls/upstream-roots.ts). */
  upstreamRoots: readonly string[];
  /** Where the VMs' CA bundles are written: readable by the VMs' uids, like egressDir. */
  caBundleDir: string;
  /** The manager's own directories (data, runtime, image cache, egress sockets), which no session may mount. */
  protectedDirs: ProtectedDirs;
  /** Secrets and git credentials from the manager's environment (none when absent). */
  credentials?: Credentials;
  /** Which isolation tiers work on this host and why not (app/runtime-setup.ts); default: the driver's own tier only. */
  tiers?: TierAvailability;
  now?: () => number;
};

/** Maps what happened to sessions onto VM removals. Removals run in the background. */
function onLifecycle(supervisor: Supervisor, images: ImageService, event: LifecycleEvent): void {
  switch (event.type) {
    case "sessions-deleted":
      return supervisor.removeInBackground(supervisor.namesForRoots(new Set(event.sessionIds)), "deleted");
    case "toggled-off":
      return supervisor.removeInBackground(supervisor.namesForRoots(new Set([event.rootSessionID])), "toggle-off");
    case "sandboxing-disabled":
      return supervisor.removeInBackground(supervisor.allNames(), "disabled");
    case "cap-changed":
      return void supervisor.enforceCap();
    case "image-chosen":
      return images.prefetch(event.choice);
  }
}

/** Keeps each root's last stop or removal in the database, so "why did my sandbox stop" has an answer. */
function recordStops(events: ReturnType<typeof createEventBus>, services: ReturnType<typeof createServices>): void {
  const stop = new AbortController();
  void (async () => {
    for await (const event of events.subscribe(stop.signal)) {
      if (event.type !== "vm" || !event.rootSessionID) continue;
      if (event.status !== "stopped" && event.status !== "evicted" && event.status !== "removed") continue;
      // A deleted session has no row to annotate; its history goes with it.
      if (event.reason === "deleted") continue;
      try {
        services.sessions.require(event.rootSessionID);
        services.vmStops.record(event.rootSessionID, { vmName: event.vmName, status: event.status, reason: event.reason, at: event.at });
      } catch {
        // the session is gone
      }
    }
  })();
}

/** One JSON log line per event (VM lifecycle at info, commands at debug: they are many). */
function logEvents(events: ReturnType<typeof createEventBus>, log: Logger): void {
  const stop = new AbortController();
  void (async () => {
    for await (const event of events.subscribe(stop.signal)) {
      if (event.type === "vm") log.info(`vm ${event.status}`, { ...event });
      else if (event.type === "image") (event.phase === "progress" ? log.debug : log.info)(`image ${event.phase}`, { ...event });
      else if (event.type === "secret" || event.type === "exec") log.debug(`${event.type} ${event.phase}`, { ...event });
      else if (event.type === "overflow") log.warn("event log fell behind", { ...event });
      else if (event.type !== "replay-gap") log.info(`${event.type} event`, { ...event });
    }
  })();
}

/** Who chose each image (by source key): the settings' default, and each root session with an override. */
function imageChoosers(services: ReturnType<typeof createServices>): Map<string, string[]> {
  const choosers = new Map<string, string[]>();
  const add = (key: string, who: string) => choosers.set(key, [...(choosers.get(key) ?? []), who]);
  add(sourceKeyOf(services.settings.get().image), "the settings' default");
  for (const session of services.sessions.list()) {
    if (session.parentID !== null) continue;
    const override = services.sessionSandbox.get(session.id).image.override;
    if (override) add(sourceKeyOf(override), `session ${session.id}`);
  }
  return choosers;
}

/** Without a probe of every tier (tests), the drivers given are the tiers that work. */
function tiersOfDriver(driver: DriverConfig | undefined): TierAvailability {
  const given = driver?.kind === "tiered" ? Object.values(driver.tiers) : driver ? [driver] : [];
  const byTier = new Map(given.map((config) => [TIER_OF_RUNTIME[config.kind], config.kind]));
  const status = (tier: IsolationTier) => {
    const kind = byTier.get(tier);
    return kind ? { available: true, reason: `the ${kind} runtime` } : { available: false, reason: "not probed on this manager" };
  };
  return { container: status("container"), gvisor: status("gvisor"), microvm: status("microvm") };
}

export function createManager(deps: ManagerDeps) {
  const tiers = deps.tiers ?? tiersOfDriver(deps.driver);
  const placeIsolation = (choice: IsolationChoice) => resolveTier(choice, tiers);
  let supervisor: Supervisor | undefined;
  let images: ImageService | undefined;
  let revocation: EgressRevocation | undefined;
  const driver = deps.driver;
  // The runtime VMs boot with by default; the embedded tiers (local, gvisor) boot the same root filesystems.
  const runtime = driver && primaryRuntime(driver);
  const imageFamily = runtime?.kind === "msb" ? "msb" : runtime ? "local" : undefined;
  const events = createEventBus();
  const services = createServices({
    db: deps.db,
    host: deps.host,
    envDefaults: deps.envDefaults,
    now: deps.now,
    notify: (event) => {
      // Connections are cut before the removal is even queued: revocation does not wait for the actor.
      revocation?.onLifecycle(event);
      if (supervisor && images) onLifecycle(supervisor, images, event);
      publishLifecycle(events, event, (deps.now ?? Date.now)());
    },
    normalizeImage: imageNormalizerFor(imageFamily),
    // A session placed in the microvm tier runs on msb, whatever other tiers this manager has.
    networkBackendFor: (choice) => (placeIsolation(choice).tier === "microvm" ? "msb" : undefined),
    protectedDirs: deps.protectedDirs,
    // The embedded runtimes' volumes live in their state dirs (one runtime dir); msb keeps its own (and does not enforce diskMib).
    diskFreeMib: runtime && runtime.kind !== "msb" ? () => freeDiskMib(runtime.stateDir) : undefined,
    secrets: deps.credentials?.secrets,
    checkIsolation: (choice) => {
      const placement = placeIsolation(choice);
      if (!placement.tier) throw new IsolationUnavailableError(placement.reason);
    },
  });
  const stillWanted = (rootSessionID: string) => {
    try {
      return services.sessionSandbox.get(rootSessionID).sandboxed;
    } catch {
      return false; // deleted, or its chain is broken
    }
  };
  let metrics: Metrics | undefined;
  supervisor = createSupervisor({
    driver: deps.driver,
    limits: () => services.settings.get(),
    now: deps.now,
    log: deps.log,
    stillWanted,
    events,
    metrics: () => metrics,
    onRemoving: (vmName, reason) => revocation?.onRemoving(vmName, reason),
  });
  const running = supervisor;
  // A main-thread driver over the actors' state, only to read usage (cgroups, volumes) at request time.
  const vmStats = createVmStats({ driver: driver && createDriver(driver), runtimeName: runtime?.kind ?? null, vms: () => running.list(), now: deps.now });
  metrics = createMetrics({
    runningVms: () => running.runningCount(),
    maxRunningVms: () => services.settings.get().maxRunningVms,
    sessions: () => countSessions(services),
    vmStats: () => vmStats.all(),
    build: { version: deps.version, runtime: runtime?.kind ?? null },
    secretHosts: deps.credentials?.secrets,
  });
  recordStops(events, services);
  logEvents(events, deps.log);
  const egress = createEgressProxies({
    dir: deps.egressDir,
    policyFor: (rootSessionID) => services.sessionSandbox.get(rootSessionID).network.effective,
    log: deps.log,
    onSubstituted: createSecretUsage(events, () => metrics, deps.now ?? Date.now),
    interception: { leafFor: (host) => deps.ca.leafFor(host), upstreamRoots: deps.upstreamRoots },
  });
  revocation = createEgressRevocation({ egress, services, credentials: deps.credentials, log: deps.log });
  images = createImageService({
    repo: createImagesRepo(deps.db),
    runtime: imageFamily,
    ...deps.images,
    events,
    log: deps.log,
    now: deps.now,
    choosers: () => imageChoosers(services),
    maxImageBytes: () => services.settings.get().maxImageMib * 1024 * 1024,
    vmImages: () => new Set(running.list().flatMap((record) => (record.spec ? [record.spec.image] : []))),
  });
  // The local runtime boots a rootfs directory, whose own store is read; msb pulls its image itself.
  const caBundles = createCaBundles({ dir: deps.caBundleDir, ca: deps.ca, storeRootFor: (image) => (imageFamily === "local" ? image : "/") });
  const execService = createExecService({
    ...services,
    images,
    sharedDirs: deps.sharedDirs,
    runtimeUnavailable: deps.runtimeUnavailable,
    placeIsolation,
    egress,
    events,
    supervisor,
    metrics,
    caBundleFor: caBundles.forImage,
    credentials: deps.credentials,
    protectedDirs: deps.protectedDirs,
  });
  const app = createApp({
    services,
    execService,
    supervisor,
    images,
    token: deps.token,
    log: deps.log,
    version: deps.version,
    runtimeStatus: deps.runtimeStatus,
    events,
    metrics,
    doctor: deps.doctor,
    ca: deps.ca,
    vmStats,
  });
  /**
   * The graceful half of a shutdown (the caller stops the HTTP server first and closes the database
   * after): every VM this manager runs is stopped with the reason "shutdown", its volume kept, and the
   * reason written down at once (the event subscriber that usually records it may not run again).
   */
  async function shutdown(): Promise<{ stopped: string[]; failed: string[] }> {
    const { stopped, failed } = await running.shutdown();
    const at = (deps.now ?? Date.now)();
    for (const record of stopped) {
      if (!record.rootSessionID) continue;
      try {
        services.vmStops.record(record.rootSessionID, { vmName: record.vmName, status: "stopped", reason: "shutdown", at });
      } catch {
        // the session is gone
      }
    }
    await egress.closeAll();
    return { stopped: stopped.map((record) => record.vmName), failed };
  }
  return { app, services, supervisor, execService, events, metrics, egress, images, ca: deps.ca, caBundles, shutdown };
}

export type Manager = ReturnType<typeof createManager>;
