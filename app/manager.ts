// Assembles the whole manager from its dependencies: services, supervisor, exec service and the HTTP
// app. main.ts feeds it the environment; tests feed it temp dirs. It only wires: what reacts to what
// lives in the modules it wires (app/services/vm-removals.ts, app/events/stop-history.ts, …).
import type { Database } from "bun:sqlite";
import type { TierAvailability } from "../runtime/isolation";
import { tierOfRuntime } from "../runtime/tiers/index";
import { createDriver } from "../workers/create-driver";
import { dockerfileBuilderOn, NO_BUILD_TIER } from "./images/dockerfile-builder";
import { createBuildEgress } from "./images/build-egress";
import { primaryRuntime, scratchWritesRuntime, type DriverConfig } from "../workers/protocol";
import { createImagesRepo } from "./db/images-repo";
import { createEventBus } from "./events/event-bus";
import { logEvents } from "./events/event-log";
import { publishLifecycle } from "./events/lifecycle-publisher";
import { recordStops } from "./events/stop-history";
import { imageChoosers } from "./images/image-choosers";
import { createImageService, imageNormalizerFor } from "./images/image-service";
import { createApp } from "./index";
import type { Logger } from "./log";
import { createMetrics, type Metrics } from "./metrics";
import type { RuntimeStatus } from "./routes/health";
import { createServices, type Services } from "./services";
import type { Credentials } from "./services/credentials";
import type { DoctorReport } from "./services/doctor";
import { createEgressProxies } from "./services/egress-proxies";
import { createEgressRevocation } from "./services/egress-revocation";
import { createExecService } from "./services/exec";
import { createDockerService } from "./services/docker";
import { createFilesService } from "./services/files";
import { createPortsService } from "./services/ports";
import { createShellTickets } from "./services/shell-tickets";
import { freeDiskMib, type HostLimits } from "./services/host-limits";
import { createLifecycleRelay } from "./services/lifecycle-relay";
import type { ProtectedDirs } from "./services/mount-deny-list";
import { createPlacement } from "./services/placement";
import { createSecretUsage } from "./services/secret-usage";
import { countSessions } from "./services/session-counts";
import type { EnvDefaults } from "./services/settings";
import { createVmEgress } from "./services/vm-egress";
import { vmWorkFor } from "./services/vm-removals";
import { createVmStats } from "./services/vm-stats";
import { createSupervisor } from "./supervisor/supervisor";
import { createCaBundles } from "./tls/ca-bundles";
import type { ManagerCa } from "./tls/manager-ca";

type ManagerDeps = {
  /** The host address forwarded ports listen on (SANDBOX_FORWARD_HOST); default 127.0.0.1, loopback only. */
  forwardHost?: string;
  /** How long a shell ticket stays redeemable (SANDBOX_SHELL_TICKET_TTL_MS); default TICKET_TTL_MS. */
  shellTicketTtlMs?: number;
  /** The largest file upload (PUT /files); default MAX_UPLOAD_BYTES. Tests lower it to see the 413. */
  maxUploadBytes?: number;
  db: Database;
  host: HostLimits;
  envDefaults: EnvDefaults;
  token: string;
  log: Logger;
  version: string;
  /** The chosen runtime; undefined when none is usable (commands are then refused with the reason). */
  driver: DriverConfig | undefined;
  runtimeUnavailable?: string;
  /** Guest images: the built-in rootfs, where built and pulled ones are cached, and what an OCI-booting tier boots by default. */
  images: { builtInRootfs: string; cacheDir: string; defaultOciImage: string; aptSources?: string };
  sharedDirs: string[];
  runtimeStatus: () => RuntimeStatus;
  doctor: () => DoctorReport;
  /** Where the per-VM egress proxy sockets live: traversable by the VMs' uids, like the runtime dir. */
  egressDir: string;
  /** The manager CA (app/tls/manager-ca.ts): every VM trusts it; the egress proxies mint leaves with it. */
  ca: ManagerCa;
  /** What an intercepted tunnel's upstream is verified against: the host's roots plus SANDBOX_EXTRA_CA_FILE (app/tls/upstream-roots.ts). */
  upstreamRoots: readonly string[];
  /** CAs every VM trusts besides the manager CA: SANDBOX_EXTRA_CA_FILE's (a private CA, a TLS-inspecting proxy). */
  guestExtraCas?: readonly string[];
  /** Where the VMs' CA bundles are written: readable by the VMs' uids, like egressDir. */
  caBundleDir: string;
  /** The manager's own directories (data, runtime, image cache, egress sockets), which no session may mount. */
  protectedDirs: ProtectedDirs;
  /** Secrets and git credentials from the manager's environment (none when absent). */
  credentials?: Credentials;
  /** Which isolation tiers work on this host and why not (app/runtime-setup.ts). */
  tiers: TierAvailability;
  now?: () => number;
};

/** Whether a root still wants its VM: a command that waited for a place is dropped if not. */
function stillSandboxed(services: Services, rootSessionID: string): boolean {
  try {
    return services.sessionSandbox.get(rootSessionID).sandboxed;
  } catch {
    return false; // deleted, or its chain is broken
  }
}

export function createManager(deps: ManagerDeps) {
  const placement = createPlacement(deps.tiers);
  const driver = deps.driver;
  // The runtime VMs boot with by default, and its tier: what the manager's images are, whether the host measures its VMs.
  const runtime = driver && primaryRuntime(driver);
  const primaryTier = runtime && tierOfRuntime(runtime.kind);
  const now = deps.now ?? Date.now;
  const events = createEventBus();
  const lifecycle = createLifecycleRelay();
  const services = createServices({
    db: deps.db,
    host: deps.host,
    envDefaults: deps.envDefaults,
    now: deps.now,
    notify: lifecycle.notify,
    publish: (event) => events.publish(event),
    normalizeImage: imageNormalizerFor(primaryTier?.imageFamily),
    networkTierFor: placement.tierFor,
    protectedDirs: deps.protectedDirs,
    // Volumes the host holds (in the runtime's state dir) bound the disk quota by the free space there.
    diskFreeMib: runtime && "stateDir" in runtime && !primaryTier?.unmeasured ? () => freeDiskMib(runtime.stateDir) : undefined,
    secrets: deps.credentials?.secrets,
    checkIsolation: placement.check,
    checkDocker: placement.checkDocker,
  });
  // Read lazily: the metrics count the supervisor's VMs, and the supervisor and proxies report into them.
  let metrics: Metrics | undefined;
  const egress = createEgressProxies({
    dir: deps.egressDir,
    policyFor: (rootSessionID) => services.sessionSandbox.get(rootSessionID).network.effective,
    log: deps.log,
    onSubstituted: createSecretUsage(events, () => metrics, now),
    interception: { leafFor: (host) => deps.ca.leafFor(host), upstreamRoots: deps.upstreamRoots },
  });
  const revocation = createEgressRevocation({ egress, services, credentials: deps.credentials, log: deps.log });
  const supervisor = createSupervisor({
    driver,
    limits: () => services.settings.get(),
    now: deps.now,
    log: deps.log,
    stillWanted: (rootSessionID) => stillSandboxed(services, rootSessionID),
    events,
    metrics: () => metrics,
    onRemoving: (vmName, reason) => revocation.onRemoving(vmName, reason),
    holdOf: (rootSessionID) => services.activity.holdOf(rootSessionID),
  });
  // A main-thread driver over the actors' state, only to read usage (cgroups, volumes) at request time.
  const vmStats = createVmStats({
    driver: driver && createDriver(driver),
    noUsageReason: primaryTier ? (primaryTier.unmeasured ?? "the runtime in use does not report per-VM usage") : "no runtime is usable on this host (see GET /api/health)",
    vms: () => supervisor.list(),
    now: deps.now,
  });
  metrics = createMetrics({
    runningVms: () => supervisor.runningCount(),
    maxRunningVms: () => services.settings.get().maxRunningVms,
    sessions: () => countSessions(services),
    vmStats: () => vmStats.all(),
    build: { version: deps.version, runtime: runtime?.kind ?? null },
    secretHosts: deps.credentials?.secrets,
  });
  // Dockerfile images are built where a VM's writes can stay in its memory, whichever tier then boots them.
  const buildTier = scratchWritesRuntime(driver);
  const images = createImageService({
    repo: createImagesRepo(deps.db),
    family: primaryTier?.imageFamily,
    ...deps.images,
    events,
    log: deps.log,
    now: deps.now,
    choosers: () => imageChoosers(services),
    maxImageBytes: () => services.settings.get().maxImageMib * 1024 * 1024,
    vmImages: () => new Set(supervisor.list().flatMap((record) => (record.spec ? [record.spec.image] : []))),
    dockerfileBuilder: buildTier
      ? dockerfileBuilderOn(() => createDriver(buildTier), supervisor, createBuildEgress({ tier: tierOfRuntime(buildTier.kind), proxies: egress, caBundleFor: (image) => caBundles.forImage(image) }))
      : NO_BUILD_TIER,
  });
  // Who hears what the sessions report, in this order: connections are cut before a removal is even queued.
  lifecycle.on((event) => revocation.onLifecycle(event));
  lifecycle.on(vmWorkFor(supervisor, images));
  lifecycle.on((event) => publishLifecycle(events, event, now()));
  recordStops(events, services);
  logEvents(events, deps.log);
  // A rootfs VM's trust bundle adds its image's own store; an OCI image is pulled by its runtime, unread here.
  const caBundles = createCaBundles({ dir: deps.caBundleDir, ca: deps.ca, extraCas: deps.guestExtraCas ?? [], storeRootFor: (image) => (primaryTier?.imageFamily === "rootfs" ? image : "/") });
  const execService = createExecService({
    ...services,
    images,
    sharedDirs: deps.sharedDirs,
    runtimeUnavailable: deps.runtimeUnavailable,
    placeIsolation: placement.place,
    egress: createVmEgress(egress, events),
    supervisor,
    metrics,
    caBundleFor: caBundles.forImage,
    credentials: deps.credentials,
    protectedDirs: deps.protectedDirs,
  });
  const docker = createDockerService({
    exec: execService,
    sessionSandbox: services.sessionSandbox,
    dockerRefusalFor: (isolation) => placement.tierFor(isolation)?.dockerRefusal,
    rootsWithVms: () => supervisor.list().flatMap((record) => (record.rootSessionID ? [record.rootSessionID] : [])),
    log: deps.log,
  });
  lifecycle.on(docker.onLifecycle);
  const ports = createPortsService({ exec: execService, sessionSandbox: services.sessionSandbox, supervisor, events, bindHost: deps.forwardHost ?? "127.0.0.1", now });
  const app = createApp({
    services,
    execService,
    files: createFilesService(execService),
    ports,
    docker,
    shellTickets: createShellTickets(deps.shellTicketTtlMs === undefined ? {} : { ttlMs: deps.shellTicketTtlMs }),
    ...(deps.maxUploadBytes === undefined ? {} : { maxUploadBytes: deps.maxUploadBytes }),
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
    ports.closeAll();
    const { stopped, failed } = await supervisor.shutdown();
    const at = now();
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
  return { app, services, supervisor, execService, ports, events, metrics, egress, images, ca: deps.ca, caBundles, shutdown };
}

export type Manager = ReturnType<typeof createManager>;
