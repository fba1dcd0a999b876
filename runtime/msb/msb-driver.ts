// The microsandbox (msb) runtime driver: one microVM per VmSpec, driven through the msb CLI.
import type { Attestation, BindMount, Capability, CreateOptions, EnsureResult, ExecRequest, ExecResult, ExecSink, RemoveOptions, RuntimeDriver, VmInfo, VmSpec } from "../driver";
import { ensureVm } from "../ensure";
import { RuntimeError } from "../driver";
import { attest } from "./attest";
import { commandFailure, isAlreadyExists, isAlreadyRunning, isSandboxNotFound, isVolumeNotFound } from "./command-errors";
import { buildCreateArgs } from "./create-args";
import { DEFAULT_EXEC_TIMINGS, type ExecTimings, runExec } from "./exec-process";
import { parseJsonOutput } from "./json-guards";
import {
  buildInspectArgs,
  buildListArgs,
  buildPingArgs,
  buildRemoveArgs,
  buildStartArgs,
  buildStopArgs,
  buildVolumeRemoveArgs,
  STOP_GRACE_SECONDS,
} from "./lifecycle-args";
import { type MsbBinary, resolveMsbBinary } from "./msb-binary";
import { buildMsbEnv, MsbCli, type MsbOutput, type MsbTraceEvent } from "./msb-cli";
import { type MsbVmInfo, parseInspect, parseList } from "./parse-inspect";
import { assessCapability, gatherProbeFacts } from "./probe";
import { ensureRepoFs } from "../repo-fs/repo-fs-binary";
import { mountSources, repoViewMounts, repoViewsAlive, repoViewsDir, startRepoViews, stopRepoViews } from "../repo-fs/repo-views";
import { existsSync } from "node:fs";

/** Exported for the fake msb harness, which builds drivers with it. */
export type MsbDriverOptions = {
  /** The msb binary; beats MSB_PATH and the pinned npm package. */
  msbPath?: string;
  /** msb's state root (default: MSB_HOME, else ~/.microsandbox). */
  msbHome?: string;
  /** Where MSB_PATH, MSB_HOME, PATH and HOME are read from (default: process.env). */
  hostEnv?: Record<string, string | undefined>;
  /** Limit for quick commands (inspect, list, rm, volume rm). */
  commandTimeoutMs?: number;
  /** Limit for create/start: msb itself waits up to 180 s for the guest agent. */
  bootTimeoutMs?: number;
  execTimings?: ExecTimings;
  /** Called after every msb command, for logs and tests. */
  trace?: (event: MsbTraceEvent) => void;
  /** Where the VMs' repository views (runtime/repo-fs) are mounted: `<dir>/repo-views/<vm>/<n>`. */
  viewsDir?: string;
};

/** The views live from create to remove: msb boots a stopped sandbox for an exec on its own. */
const DEFAULT_VIEWS_DIR = "/var/lib/session-sandbox/msb";

/** The id the guest's root has on the host through virtiofs: msb passes ids through, so root's own. */
const MSB_GUEST_ROOT_ID = 0;

export class MsbDriver implements RuntimeDriver {
  readonly name = "msb" as const;
  readonly binary: MsbBinary | undefined;
  readonly #cli: MsbCli | undefined;
  readonly #commandTimeoutMs: number;
  readonly #bootTimeoutMs: number;
  readonly #execTimings: ExecTimings;
  readonly #viewsDir: string;

  constructor(options: MsbDriverOptions = {}) {
    const hostEnv = options.hostEnv ?? process.env;
    this.binary = resolveMsbBinary(options, hostEnv);
    this.#cli = this.binary ? new MsbCli(this.binary.path, buildMsbEnv(hostEnv, options.msbHome), options.trace) : undefined;
    this.#commandTimeoutMs = options.commandTimeoutMs ?? 60_000;
    this.#bootTimeoutMs = options.bootTimeoutMs ?? 240_000;
    this.#execTimings = options.execTimings ?? DEFAULT_EXEC_TIMINGS;
    this.#viewsDir = options.viewsDir ?? DEFAULT_VIEWS_DIR;
  }

  /** Starts the spec's repository views (never a plain bind of a guarded repository); their mount sources. */
  async #startViews(spec: Pick<VmSpec, "name" | "mounts">): Promise<Map<BindMount, string>> {
    if (spec.mounts.some((mount) => mount.guard)) {
      const build = ensureRepoFs();
      if (!build.path) throw new RuntimeError("FAILED", `the repository view is not available, so no VM can mount a repository: ${build.problem}`);
      await startRepoViews(this.#viewsDir, spec.name, spec.mounts, MSB_GUEST_ROOT_ID, build.path);
    }
    return mountSources(this.#viewsDir, spec.name, spec.mounts);
  }

  /** A create that would replace nothing leaves the views of a VM of that name alone (msb refuses it). */
  async #createWithViews(spec: VmSpec, replace: boolean): Promise<MsbOutput> {
    const existing = !replace && existsSync(repoViewsDir(this.#viewsDir, spec.name));
    const sources = existing ? mountSources(this.#viewsDir, spec.name, spec.mounts) : await this.#startViews(spec);
    return this.#run(buildCreateArgs(spec, { replace, sources }), this.#bootTimeoutMs);
  }

  get #msb(): MsbCli {
    if (!this.#cli) throw new RuntimeError("UNAVAILABLE", "no msb binary found: run `bun install` (microsandbox is a devDependency) or set MSB_PATH");
    return this.#cli;
  }

  #run(args: string[], timeoutMs = this.#commandTimeoutMs): Promise<MsbOutput> {
    return this.#msb.run(args, { timeoutMs });
  }

  async probe(): Promise<Capability> {
    return assessCapability(await gatherProbeFacts(this.binary, this.#cli));
  }

  async ping(): Promise<boolean> {
    if (!this.#cli) return false;
    const out = await this.#run(buildPingArgs()).catch(() => undefined);
    return out?.exitCode === 0;
  }

  /** `replace` recreates a VM of the same name (msb `--replace`); the named data volume and its files are kept. */
  async create(spec: VmSpec, options: CreateOptions = {}): Promise<VmInfo> {
    this.#msb.rememberSecrets(spec);
    if (options.replace) return this.#afterCreate(spec, await this.#createWithViews(spec, true));
    let out = await this.#createWithViews(spec, false);
    if (isAlreadyExists(out)) {
      if ((await this.#listNames()).has(spec.name)) throw commandFailure(out);
      // A failed create can leave the name registered while list/inspect do not show it (msb #1550,
      // reproduced with 0.6.18): replace that ghost, once.
      out = await this.#createWithViews(spec, true);
    }
    return this.#afterCreate(spec, out);
  }

  /**
   * A failed boot leaves the sandbox Stopped with its config when its volume already existed (msb
   * keeps it; `remove` then deletes both), or rolls everything back when msb created the volume.
   */
  async #afterCreate(spec: VmSpec, out: MsbOutput): Promise<VmInfo> {
    if (out.exitCode !== 0) {
      // A failed create leaves no view. A sandbox msb kept (Stopped, with its config) then cannot start
      // without one: its mount source is gone, so it fails closed until it is created again.
      await stopRepoViews(this.#viewsDir, spec.name);
      throw commandFailure(out);
    }
    const info = await this.inspect(spec.name);
    if (!info) throw new RuntimeError("FAILED", `msb create reported success but msb inspect does not find "${spec.name}"`);
    return info;
  }

  /** Reuses the VM if it attests against `spec`, else recreates it (volume kept); creates it if missing. */
  ensure(spec: VmSpec): Promise<EnsureResult> {
    this.#cli?.rememberSecrets(spec);
    return ensureVm(this, spec);
  }

  /** msb reports back what it stored, in its own spelling: compared field by field (runtime/msb/attest.ts). */
  attest(expected: VmSpec, actual: VmInfo): Attestation {
    return attest(expected, actual);
  }

  async start(name: string): Promise<void> {
    // After a host reboot (or a daemon that died) the views are started again before the VM boots.
    if (!repoViewsAlive(this.#viewsDir, name)) {
      const mounts = repoViewMounts(this.#viewsDir, name);
      await this.#startViews({ name, mounts });
    }
    const out = await this.#run(buildStartArgs(name), this.#bootTimeoutMs);
    if (out.exitCode === 0 || isAlreadyRunning(out)) return;
    throw commandFailure(out);
  }

  /** Idempotent: a stopped or missing VM counts as stopped. */
  async stop(name: string): Promise<void> {
    const out = await this.#run(buildStopArgs(name), (STOP_GRACE_SECONDS + 30) * 1000);
    if (out.exitCode === 0 || isSandboxNotFound(out, name)) return;
    throw commandFailure(out);
  }

  /**
   * Removes the VM and its volume; a missing VM counts as removed. The volume goes before the
   * sandbox record, so a crash in between leaves a record that names the volume and a retry finishes.
   */
  async remove(name: string, options: RemoveOptions = {}): Promise<void> {
    const info = await this.inspect(name);
    if (!info) return;
    if (info.status === "running") {
      const stopped = await this.#run(buildStopArgs(name, { force: true }));
      if (stopped.exitCode !== 0 && !isSandboxNotFound(stopped, name)) throw commandFailure(stopped);
    }
    if (info.spec.volume.name && !options.keepVolume) {
      const volume = info.spec.volume.name;
      const out = await this.#run(buildVolumeRemoveArgs(volume));
      if (out.exitCode !== 0 && !isVolumeNotFound(out, volume)) throw commandFailure(out);
    }
    const out = await this.#run(buildRemoveArgs(name));
    if (out.exitCode !== 0 && !isSandboxNotFound(out, name)) throw commandFailure(out);
    await stopRepoViews(this.#viewsDir, name);
  }

  /**
   * Runs `request.argv` in the VM. msb boots a stopped sandbox for one exec and stops it again
   * afterwards, so callers `start` the VM first to keep background processes and /tmp.
   */
  exec(name: string, request: ExecRequest, sink: ExecSink): Promise<ExecResult> {
    if (request.user) return Promise.reject(new RuntimeError("FAILED", "a command as another guest user runs only on the gVisor tier (a Dockerfile build's USER)"));
    return runExec(this.#msb, name, request, sink, this.#execTimings);
  }

  async inspect(name: string): Promise<MsbVmInfo | undefined> {
    const out = await this.#run(buildInspectArgs(name));
    if (isSandboxNotFound(out, name)) return undefined;
    if (out.exitCode !== 0) throw commandFailure(out);
    const json = parseJsonOutput(out.stdout, "msb inspect");
    if (!json.ok) throw new RuntimeError("FAILED", json.error);
    return parseInspect(json.value, name);
  }

  async list(labels: Record<string, string>): Promise<MsbVmInfo[]> {
    const names = await this.#listNames(labels);
    // A VM removed between list and inspect is simply not reported.
    const infos = await Promise.all([...names].map((name) => this.inspect(name)));
    return infos.filter((info): info is MsbVmInfo => info !== undefined);
  }

  async #listNames(labels: Record<string, string> = {}): Promise<Set<string>> {
    const out = await this.#run(buildListArgs(labels));
    if (out.exitCode !== 0) throw commandFailure(out);
    const json = parseJsonOutput(out.stdout, "msb list");
    if (!json.ok) throw new RuntimeError("FAILED", json.error);
    return new Set(parseList(json.value).entries.map((entry) => entry.name));
  }
}
