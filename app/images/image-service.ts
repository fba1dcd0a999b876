// Guest images on request: the built-in rootfs, the built-in recipe plus extra Debian packages (built
// by scripts/extend-rootfs.sh), or an OCI image pulled from a registry and cached by digest. Builds and
// pulls run in the background, one per choice at a time, with progress in the event stream; a command
// whose image is not ready waits for it, and fails with the reason (booting nothing) if it cannot be had.
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { ImageRow, ImagesRepo } from "../db/images-repo";
import { ImageInUseError, ImageInvalidError, ImageNotFoundError, ImageTooLargeError, ImageUnavailableError } from "../errors";
import type { EventBus, ImageEventPhase } from "../events/event-bus";
import type { Logger } from "../log";
import { rootfsReady } from "../../runtime/local/rootfs";
import { OCI_FAMILY_BUILDS_NO_RECIPES, type ImageFamily } from "../../runtime/tiers/index";
import {
  describeImage,
  digestDirKey,
  normalizeImageChoice,
  parseReference,
  recipeDirKey,
  sourceKeyOf,
  type ImageChoice,
} from "./image-choice";
import { ImagePullError, pullRootfs, resolveDigest } from "./oci-pull";
import { removeStaleBuildTools } from "./dockerfile-build";
import { createDockerfileSources, type DockerfileSource } from "./dockerfile-source";
import type { BuildPlan } from "./dockerfile";
import type { BuildSession } from "./build-egress";
import { checkFromRegistry } from "./from-registry";
import type { NetworkPolicy } from "../../egress/index";
import { directoryBytes, ImageSizeExceeded, runWithinSize } from "./size-watch";

export const EXTEND_ROOTFS_SCRIPT = new URL("../../scripts/extend-rootfs.sh", import.meta.url).pathname;
/** Unused images are kept this long after their last use before the background GC removes them. */
const DEFAULT_KEEP_UNUSED_MS = 24 * 60 * 60 * 1000;
const GC_INTERVAL_MS = 10 * 60 * 1000;
const LAST_USE_RESOLUTION_MS = 60 * 1000;

type ImageServiceDeps = {
  repo: ImagesRepo;
  /** The most a build or pull may write (the maxImageMib setting, read at each start). */
  maxImageBytes: () => number;
  /** What this manager's VMs boot (runtime/tiers/): rootfs directories built or pulled here, or OCI references their runtime pulls itself. */
  family: ImageFamily | undefined;
  /** The built-in image (scripts/build-rootfs.sh); never removed by this service. */
  builtInRootfs: string;
  /** Where built and pulled images live, one directory each. */
  cacheDir: string;
  /** What an `oci` family VM boots for the built-in choice. */
  defaultOciImage: string;
  /** sources.list lines extra packages come from (SANDBOX_APT_SOURCES); default: the Debian mirror. */
  aptSources?: string;
  events: EventBus;
  log: Logger;
  now?: () => number;
  /** Who chose each image now (by source key): settings and sessions. */
  choosers: () => Map<string, string[]>;
  /** The image (rootfs path or reference) of every VM the manager knows, running or stopped. */
  vmImages: () => Set<string>;
  /** Runs a Dockerfile build in a sandbox VM (dockerfile-build.ts); absent when no tier here can (no gVisor): the reason. */
  dockerfileBuilder: DockerfileBuilder | string;
};

/** What the image service hands a Dockerfile build; the manager adds the driver, the VM and its limits. */
export type DockerfileBuilder = (job: { plan: BuildPlan; bases: Record<string, string>; contextDir: string; dockerignore?: string; rootfs: string; limitBytes: number; onLine: (line: string) => void; digest: string; session: BuildSession }) => Promise<void>;

/** Where a choice is booted: the session's repository and network policy, for a Dockerfile choice. */
export type ImageContext = { directory: string; network: NetworkPolicy; rootSessionID: string };

/** What `GET /api/images` shows for one image. */
type ImageView = {
  image: string;
  choice: ImageChoice;
  description: string;
  status: ImageRow["status"];
  detail: string | null;
  digest: string | null;
  path: string | null;
  sizeBytes: number | null;
  usedBy: string[];
  createdAt: number | null;
  lastUsedAt: number | null;
};

const mib = (bytes: number) => Math.round(bytes / (1024 * 1024));


/** Checks a choice's grammar and that this manager's VMs can boot its kind; returns it normalized. Throws a 400. */
export function imageNormalizerFor(family: ImageFamily | undefined): (choice: ImageChoice) => ImageChoice {
  return (choice) => {
    const normalized = normalizeImageChoice(choice);
    if (family === "oci" && normalized.kind === "recipe" && normalized.packages.length > 0) throw new ImageInvalidError(OCI_FAMILY_BUILDS_NO_RECIPES);
    return normalized;
  };
}

export function createImageService(deps: ImageServiceDeps) {
  const now = deps.now ?? Date.now;
  const inFlight = new Map<string, Promise<string>>();
  const dockerfileSources = createDockerfileSources(now);
  let gcTimer: ReturnType<typeof setInterval> | undefined;

  const dirOf = (dirKey: string) => join(deps.cacheDir, dirKey);

  function publish(image: string, phase: ImageEventPhase, detail: string | null): void {
    deps.events.publish({ type: "image", image, phase, detail, at: now() });
  }

  const normalize = imageNormalizerFor(deps.family);

  function record(row: Omit<ImageRow, "createdAt" | "updatedAt" | "lastUsedAt">, phase: ImageEventPhase): void {
    const before = deps.repo.get(row.sourceKey);
    deps.repo.put({ ...row, createdAt: before?.createdAt ?? now(), updatedAt: now(), lastUsedAt: before?.lastUsedAt ?? null });
    publish(row.sourceKey, phase, row.detail);
  }

  /** Progress: the row keeps the latest line (for `bun run images`), the event stream gets every line. */
  function progress(sourceKey: string): (line: string) => void {
    return (line) => {
      const row = deps.repo.get(sourceKey);
      if (row) deps.repo.put({ ...row, detail: line, updatedAt: now() });
      publish(sourceKey, "progress", line);
    };
  }

  async function finish(choice: ImageChoice, sourceKey: string, dirKey: string, digest: string | null, detail: string): Promise<string> {
    const path = dirOf(dirKey);
    record({ sourceKey, choice, dirKey, digest, status: "ready", detail, sizeBytes: (await directoryBytes(path)) ?? null }, "ready");
    return path;
  }

  async function build(choice: ImageChoice & { kind: "recipe" }, sourceKey: string): Promise<string> {
    const dirKey = recipeDirKey(choice.packages, deps.builtInRootfs, deps.aptSources ?? "");
    if (existsSync(dirOf(dirKey))) return finish(choice, sourceKey, dirKey, null, "reused the cached build");
    if (!rootfsReady(deps.builtInRootfs)) throw new ImagePullError(`the built-in image is not built at ${deps.builtInRootfs}; run scripts/build-rootfs.sh`);
    record({ sourceKey, choice, dirKey, digest: null, status: "building", detail: `building: the built-in image plus ${choice.packages.join(", ")}`, sizeBytes: null }, "building");
    const env = { ...process.env, ...(deps.aptSources ? { SANDBOX_APT_SOURCES: deps.aptSources } : {}) };
    const partial = `${dirOf(dirKey)}.partial`; // where extend-rootfs.sh builds it
    const bounds = { dir: partial, fsPath: deps.cacheDir, limitBytes: deps.maxImageBytes() };
    // A build killed at the limit has no chance to clean up after itself: its partial tree goes here.
    const result = await runWithinSize(["bash", EXTEND_ROOTFS_SCRIPT, deps.builtInRootfs, dirOf(dirKey), ...choice.packages], progress(sourceKey), bounds, { env }).catch((error: unknown) => {
      rmSync(partial, { recursive: true, force: true });
      throw error;
    });
    if (result.code !== 0 || !existsSync(dirOf(dirKey))) {
      const apt = result.stderr.split("\n").filter((line) => /^\s*E: /.test(line)).map((line) => line.trim());
      throw new ImagePullError(apt.length > 0 ? apt.slice(-2).join("; ") : (result.stderr.trim().split("\n").at(-1) ?? `exit ${result.code}`));
    }
    return finish(choice, sourceKey, dirKey, null, `built in ${deps.cacheDir}`);
  }

  async function pull(choice: ImageChoice & { kind: "oci" }, sourceKey: string): Promise<string> {
    const parsed = parseReference(choice.reference);
    record({ sourceKey, choice, dirKey: null, digest: null, status: "pulling", detail: `asking ${parsed.domain} for the digest`, sizeBytes: null }, "pulling");
    const digest = await resolveDigest(parsed);
    const dirKey = digestDirKey(digest);
    if (existsSync(dirOf(dirKey))) return finish(choice, sourceKey, dirKey, digest, `cached by digest ${digest}`);
    record({ sourceKey, choice, dirKey, digest, status: "pulling", detail: `pulling ${digest}`, sizeBytes: null }, "progress");
    await pullRootfs(parsed, digest, dirOf(dirKey), progress(sourceKey), deps.maxImageBytes());
    return finish(choice, sourceKey, dirKey, digest, `pulled ${digest}`);
  }

  /**
   * A Dockerfile build: the images it starts from and copies from first (pulls, cached like any), then the
   * build in sandbox VMs.
   * `sourceKey` already names the content digest, so an unchanged repository never gets here twice.
   */
  async function buildDockerfile(choice: ImageChoice & { kind: "dockerfile" }, sourceKey: string, dockerfile: DockerfileSource, session: BuildSession): Promise<string> {
    const dirKey = `dockerfile-${dockerfile.digest.slice("sha256:".length, "sha256:".length + 24)}`;
    if (existsSync(dirOf(dirKey))) return finish(choice, sourceKey, dirKey, dockerfile.digest, "reused the build of this content");
    if (typeof deps.dockerfileBuilder === "string") throw new ImagePullError(deps.dockerfileBuilder);
    record({ sourceKey, choice, dirKey, digest: dockerfile.digest, status: "building", detail: `building ${choice.path}: pulling ${dockerfile.plan.images.join(", ")}`, sizeBytes: null }, "building");
    const bases: Record<string, string> = {};
    for (const image of dockerfile.plan.images) {
      // An image's own failure (registry down, too large) is this build's reason, said as such.
      bases[image] = await ensure(normalize({ kind: "oci", reference: image })).catch((error: Error) => {
        throw new ImagePullError(`the image ${image} the Dockerfile starts from or copies from could not be had: ${error.message}`);
      });
    }
    // The builder removes its own partial directory, whatever happens (dockerfile-build.ts).
    await deps.dockerfileBuilder({ plan: dockerfile.plan, bases, contextDir: dockerfile.directory, dockerignore: dockerfile.dockerignore, rootfs: dirOf(dirKey), limitBytes: deps.maxImageBytes(), onLine: progress(sourceKey), digest: dockerfile.digest, session });
    return finish(choice, sourceKey, dirKey, dockerfile.digest, `built from ${choice.path} (${dockerfile.digest})`);
  }

  /** `dockerfile`: a Dockerfile choice's content, and the session whose command builds it. */
  async function produce(choice: ImageChoice, sourceKey: string, dockerfile?: { source: DockerfileSource; session: BuildSession }): Promise<string> {
    try {
      mkdirSync(deps.cacheDir, { recursive: true, mode: 0o700 });
      if (choice.kind === "dockerfile") {
        // ensureKeyed reads a Dockerfile choice's source (and has its session) before it gets here.
        if (!dockerfile) throw new ImageInvalidError("a Dockerfile image is built for a session's command");
        return await buildDockerfile(choice, sourceKey, dockerfile.source, dockerfile.session);
      }
      return choice.kind === "recipe" ? await build(choice, sourceKey) : await pull(choice, sourceKey);
    } catch (error) {
      const row = deps.repo.get(sourceKey);
      if (error instanceof ImageSizeExceeded) {
        const tooLarge = new ImageTooLargeError(describeImage(choice), mib(error.limitBytes), mib(error.reachedBytes));
        record({ sourceKey, choice, dirKey: row?.dirKey ?? null, digest: row?.digest ?? null, status: "failed", detail: `${tooLarge.errorCode}: ${tooLarge.message}`, sizeBytes: null }, "failed");
        throw tooLarge;
      }
      const reason = error instanceof ImagePullError || error instanceof ImageInvalidError ? error.message : `unexpected failure: ${String(error)}`;
      record({ sourceKey, choice, dirKey: row?.dirKey ?? null, digest: row?.digest ?? null, status: "failed", detail: reason, sizeBytes: null }, "failed");
      if (!(error instanceof ImagePullError)) deps.log.error("image build or pull failed unexpectedly", { image: sourceKey, error: String(error) });
      throw new ImageUnavailableError(describeImage(choice), reason);
    }
  }

  /**
   * The rootfs directory of a choice, building or pulling it first if needed (one job per choice at a time),
   * and the key of its row. A Dockerfile choice needs the repository it is read from, and is one image per
   * content digest: its key names the digest.
   */
  async function ensureKeyed(choice: ImageChoice, context?: ImageContext): Promise<{ path: string; sourceKey: string }> {
    let sourceKey = sourceKeyOf(choice);
    let dockerfile: DockerfileSource | undefined;
    if (choice.kind === "dockerfile") {
      if (!context) throw new ImageInvalidError(`a Dockerfile image is built from a session's repository: choose it for a session or as the default for sessions, not on its own`);
      dockerfile = dockerfileSources(context.directory, choice.path, deps.maxImageBytes());
      for (const image of dockerfile.plan.images) await checkFromRegistry(parseReference(image), context.network);
      sourceKey = `${sourceKey}@${dockerfile.digest}`;
    }
    if (sourceKey === "default") {
      if (!rootfsReady(deps.builtInRootfs)) throw new ImageUnavailableError("default", `the built-in image is not built at ${deps.builtInRootfs}; run scripts/build-rootfs.sh`);
      return { path: deps.builtInRootfs, sourceKey };
    }
    const row = deps.repo.get(sourceKey);
    if (row?.status === "ready" && row.dirKey && existsSync(dirOf(row.dirKey))) return { path: dirOf(row.dirKey), sourceKey };
    let job = inFlight.get(sourceKey);
    if (!job) {
      job = produce(choice, sourceKey, dockerfile && context && { source: dockerfile, session: { rootSessionID: context.rootSessionID, network: context.network } }).finally(() => inFlight.delete(sourceKey));
      inFlight.set(sourceKey, job);
    }
    return { path: await job, sourceKey };
  }

  /** The rootfs directory of a choice, building or pulling it first if needed. */
  async function ensure(choice: ImageChoice, context?: ImageContext): Promise<string> {
    return (await ensureKeyed(choice, context)).path;
  }

  /** What a VM of this choice boots: a rootfs directory, or an image reference its runtime pulls. */
  async function bootImage(choice: ImageChoice, context?: ImageContext): Promise<string> {
    if (deps.family === "oci") {
      if (choice.kind === "dockerfile") throw new ImageUnavailableError(describeImage(choice), "a Dockerfile image is built into a root filesystem, and this manager's microVMs boot OCI images: build and push the image, then give its reference");
      return choice.kind === "oci" ? choice.reference : deps.defaultOciImage;
    }
    const { path, sourceKey } = await ensureKeyed(choice, context);
    // Every command passes here: the last use is written at most once a minute (the GC keeps images
    // for DEFAULT_KEEP_UNUSED_MS, so finer would only cost a SQLite write per command).
    const row = deps.repo.get(sourceKey);
    if (row && (row.lastUsedAt === null || now() - row.lastUsedAt >= LAST_USE_RESOLUTION_MS)) deps.repo.put({ ...row, lastUsedAt: now() });
    return path;
  }

  /** Starts a build or pull now, so a later command does not wait for it; failures are reported as events. */
  function prefetch(choice: ImageChoice): void {
    // A Dockerfile image is read from a session's repository: it is built at that session's first command.
    if (deps.family !== "rootfs" || choice.kind === "dockerfile") return;
    ensure(choice).catch(() => undefined); // recorded as a failed row and event; the next use retries
  }

  function usersOf(row: ImageRow, choosers: Map<string, string[]>, vmImages: Set<string>): string[] {
    const users = [...(choosers.get(row.sourceKey) ?? [])];
    if (row.dirKey && vmImages.has(dirOf(row.dirKey))) users.push("a VM");
    if (inFlight.has(row.sourceKey)) users.push("a build or pull in progress");
    return users;
  }

  function list(): ImageView[] {
    const choosers = deps.choosers();
    const vmImages = deps.vmImages();
    const builtInReady = rootfsReady(deps.builtInRootfs);
    const builtIn: ImageView = {
      image: "default",
      choice: { kind: "recipe", packages: [] },
      description: "the built-in image (scripts/build-rootfs.sh)",
      status: builtInReady ? "ready" : "failed",
      detail: builtInReady ? null : "not built: run scripts/build-rootfs.sh",
      digest: null,
      path: deps.builtInRootfs,
      sizeBytes: null,
      usedBy: [...(choosers.get("default") ?? []), ...(vmImages.has(deps.builtInRootfs) ? ["a VM"] : [])],
      createdAt: null,
      lastUsedAt: null,
    };
    const rows = deps.repo.list().map((row) => ({
      image: row.sourceKey,
      choice: row.choice,
      description: describeImage(row.choice),
      status: row.status,
      detail: row.detail,
      digest: row.digest,
      path: row.dirKey ? dirOf(row.dirKey) : null,
      sizeBytes: row.sizeBytes,
      usedBy: usersOf(row, choosers, vmImages),
      createdAt: row.createdAt,
      lastUsedAt: row.lastUsedAt,
    }));
    return deps.family === "rootfs" ? [builtIn, ...rows] : rows;
  }

  /** Deletes a row, and its directory when no other row shares it (two references of one digest do). */
  function drop(row: ImageRow): void {
    deps.repo.remove(row.sourceKey);
    if (row.dirKey && !deps.repo.list().some((other) => other.dirKey === row.dirKey)) rmSync(dirOf(row.dirKey), { recursive: true, force: true });
    publish(row.sourceKey, "removed", null);
  }

  function remove(sourceKey: string): void {
    if (sourceKey === "default") throw new ImageInUseError("default", ["the manager: the built-in image is never removed"]);
    const row = deps.repo.get(sourceKey);
    if (!row) throw new ImageNotFoundError(sourceKey);
    const users = usersOf(row, deps.choosers(), deps.vmImages());
    if (users.length > 0) throw new ImageInUseError(sourceKey, users);
    drop(row);
  }

  /** Removes every image nobody uses whose last use is at least `olderThanMs` ago. Returns what went (or would go). */
  function prune(options: { olderThanMs?: number; dryRun?: boolean } = {}): { removed: string[]; freedBytes: number } {
    const choosers = deps.choosers();
    const vmImages = deps.vmImages();
    const cutoff = now() - (options.olderThanMs ?? 0);
    const unused = deps.repo.list().filter((row) => usersOf(row, choosers, vmImages).length === 0 && (row.lastUsedAt ?? row.updatedAt) <= cutoff);
    if (!options.dryRun) for (const row of unused) drop(row);
    return { removed: unused.map((row) => row.sourceKey), freedBytes: unused.reduce((sum, row) => sum + (row.sizeBytes ?? 0), 0) };
  }

  /**
   * At startup, before any build: a build or pull the last run was doing is marked failed (the next use
   * retries), and what a crash left in the cache (partial directories, directories no row names) goes.
   */
  function recover(): string[] {
    const cleaned: string[] = [];
    for (const row of deps.repo.list()) {
      if (row.status === "building" || row.status === "pulling") {
        deps.repo.put({ ...row, status: "failed", detail: "interrupted: the manager stopped during the build or pull; the next use retries", updatedAt: now() });
      }
    }
    cleaned.push(...removeStaleBuildTools());
    if (!existsSync(deps.cacheDir)) return cleaned;
    const known = new Set(deps.repo.list().map((row) => row.dirKey).filter(Boolean));
    for (const entry of readdirSync(deps.cacheDir)) {
      if (known.has(entry)) continue;
      try {
        rmSync(join(deps.cacheDir, entry), { recursive: true, force: true });
        cleaned.push(entry);
      } catch (error) {
        // A leftover that cannot go now must not stop the manager; the next start tries again.
        deps.log.warn("could not remove an image cache leftover", { entry, error: String(error) });
      }
    }
    return cleaned;
  }

  function startGc(keepUnusedMs = DEFAULT_KEEP_UNUSED_MS): void {
    gcTimer = setInterval(() => {
      const { removed } = prune({ olderThanMs: keepUnusedMs });
      if (removed.length > 0) deps.log.info("removed unused images", { images: removed });
    }, GC_INTERVAL_MS);
    gcTimer.unref?.();
  }

  function stop(): void {
    if (gcTimer) clearInterval(gcTimer);
  }

  return { normalize, ensure, bootImage, prefetch, list, remove, prune, recover, startGc, stop };
}

export type ImageService = ReturnType<typeof createImageService>;
