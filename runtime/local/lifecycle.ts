// create / start / stop / remove of one VM: crun container + cgroups + guest root + volume.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_DISK_MIB, egressSocketOf, RuntimeError, type CreateOptions, type VmInfo, type VmSpec } from "../driver";
import { killCgroup, listSubCgroups, removeCgroup, vmCgroupGone } from "./cgroup-tree";
import type { DriverContext } from "./context";
import { imageMounts, materializeGuestRoot, planGuestRoot } from "./guest-root";
import { buildOciConfig } from "./oci-config";
import type { RuntimeVm } from "./oci-runtime";
import { trustMounts } from "./trust-mounts";
import { validateSpec } from "./validate-spec";
import { handEgressSocketToVm } from "./egress-socket";
import type { VmRecord } from "./vm-store";
import { processStartTime } from "../proc-stat";
import { ensureRepoFs } from "../repo-fs/repo-fs-binary";
import { mountSources, repoViewsAlive, startRepoViews, stopRepoViews } from "../repo-fs/repo-views";

function runtimeVm(ctx: DriverContext, name: string, record: VmRecord): RuntimeVm {
  const sources = mountSources(ctx.paths.stateDir, name, record.spec.mounts);
  return { name, id: ctx.paths.containerId(name), spec: record.spec, hostUidBase: record.hostUidBase, cgroupPath: record.cgroupPath, bundleDir: ctx.paths.bundleDir(name), sources };
}

/** The repository view daemon; a VM with a repository never starts without it (nothing falls back to a plain bind). */
function requireRepoFs(ctx: DriverContext): string {
  const build = ensureRepoFs(ctx.repoFsDir);
  if (!build.path) throw new RuntimeError("FAILED", `the repository view is not available, so no VM can mount a repository: ${build.problem}`);
  return build.path;
}

function failed(action: string, name: string, error: unknown): RuntimeError {
  if (error instanceof RuntimeError) return error;
  return new RuntimeError("FAILED", `${action} ${name} failed: ${error instanceof Error ? error.message : String(error)}`);
}

export async function createVm(ctx: DriverContext, spec: VmSpec, options: CreateOptions = {}): Promise<VmInfo> {
  validateSpec(spec, ctx.paths.stateDir);
  if (spec.scratchWrites && !ctx.runtime.keepsWritesInMemory) {
    throw new RuntimeError("FAILED", `VM ${spec.name} asks that its writes stay in its memory (an image build), which the container tier cannot keep from the host's files: use the gVisor tier (isolation: gvisor)`);
  }
  if (spec.docker && !ctx.runtime.holdsDocker) {
    throw new RuntimeError("FAILED", `VM ${spec.name} asks for a Docker Engine, which needs mounts and nested namespaces the container tier refuses on the host's kernel: use the gVisor tier (isolation: gvisor)`);
  }
  if (options.replace) await removeVm(ctx, spec.name, { keepVolume: true });
  // 0711 like the state dir: traversable by the VM's uid (see createLocalDriver), not listable.
  mkdirSync(ctx.paths.vmsDir, { recursive: true, mode: 0o711 });
  try {
    mkdirSync(ctx.paths.vmDir(spec.name), { mode: 0o711 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") throw new RuntimeError("ALREADY_EXISTS", `VM ${spec.name} already exists`);
    throw failed("create", spec.name, error);
  }
  let volumeCreated = false;
  try {
    const diskMib = spec.diskMib ?? DEFAULT_DISK_MIB;
    const { record: volume, created } = await ctx.volumes.ensure(spec.volume.name, diskMib);
    volumeCreated = created;
    // Mounting takes a moment: start it now, beside the steps below; startVm waits for this same mount.
    ctx.volumes.mount(spec.volume.name).catch(() => {});
    const hostUidBase = ctx.volumes.hostUidBase(volume.slot);
    const plan = planGuestRoot(spec.image, spec.mounts.map((m) => m.hostPath));
    materializeGuestRoot(plan, ctx.paths.guestRoot(spec.name), hostUidBase);
    const cgroupPath = ctx.paths.cgroupPath(spec.name);
    const sources = mountSources(ctx.paths.stateDir, spec.name, spec.mounts);
    const config = ctx.runtime.adaptConfig(buildOciConfig({
      spec,
      guestRoot: ctx.paths.guestRoot(spec.name),
      hostUidBase,
      cgroupsPath: cgroupPath,
      pidsLimit: ctx.pidsLimit,
      initPath: ctx.initPath,
      volumeData: ctx.paths.volumeData(spec.volume.name),
      imageMounts: imageMounts(plan, spec.image),
      trustMounts: trustMounts(spec, plan),
      execAgent: ctx.execAgent,
      relay: ctx.relay,
      sources,
    }), { name: spec.name, id: ctx.paths.containerId(spec.name), spec, hostUidBase, cgroupPath, bundleDir: ctx.paths.bundleDir(spec.name), sources });
    mkdirSync(ctx.paths.bundleDir(spec.name), { mode: 0o711 });
    writeFileSync(join(ctx.paths.bundleDir(spec.name), "config.json"), JSON.stringify(config, null, 1), { mode: 0o600 });
    const createdAt = Date.now();
    ctx.store.write(spec.name, { spec: structuredClone(spec), createdAt, hostUidBase, cgroupPath, ...(ctx.execAgent ? { execAgent: true } : {}) });
    await startVm(ctx, spec.name);
    refillLater(ctx, diskMib);
    return { name: spec.name, status: "running", spec: structuredClone(spec), createdAt };
  } catch (error) {
    await removeVm(ctx, spec.name, { keepVolume: true }).catch(() => {});
    if (volumeCreated) await ctx.volumes.remove(spec.volume.name).catch(() => {});
    throw failed("create", spec.name, error);
  }
}

/**
 * After a create, the next spare disk is formatted only once the new VM's first commands are likely done:
 * mkfs beside a boot's first exec on a small host slowed it more than the spare saves (measured with
 * bench/compare-revision.ts). Removals refill at once (see removeVm); refill() skips if a spare exists.
 */
const SPARE_REFILL_DELAY_MS = 1_000;
/** The longest a stopped VM's processes may take to leave its cgroup after SIGKILL. */
const POWER_OFF_KILL_MS = 15_000;

function refillLater(ctx: DriverContext, diskMib: number): void {
  const timer = setTimeout(() => ctx.volumes.disks.spares.refill(diskMib), SPARE_REFILL_DELAY_MS);
  timer.unref?.();
}

export async function startVm(ctx: DriverContext, name: string): Promise<void> {
  const record = ctx.store.read(name);
  if (!record) throw new RuntimeError("NOT_FOUND", `VM ${name} does not exist`);
  // Running with its repository views: nothing to do. A view that died stops the VM and boots it again.
  if (ctx.store.livePid(name) && repoViewsAlive(ctx.paths.stateDir, name)) return;
  try {
    // Usually already mounted (a cheap check); after a host reboot it is not. Runs beside the clean-up.
    const volumeMounted = ctx.volumes.mount(record.spec.volume.name);
    volumeMounted.catch(() => {}); // awaited below; this only keeps an early failure from going unhandled
    // A VM that died on its own (or before a host reboot) leaves crun state and cgroups behind.
    await powerOff(ctx, name, record.cgroupPath);
    const execDir = ctx.paths.execDir(name);
    rmSync(execDir, { recursive: true, force: true });
    mkdirSync(execDir, { mode: 0o700 });
    const pidFile = join(ctx.paths.vmDir(name), "pid");
    rmSync(pidFile, { force: true });
    await volumeMounted;
    const egressSocket = egressSocketOf(record.spec);
    if (egressSocket) handEgressSocketToVm(egressSocket, record.hostUidBase);
    if (record.spec.mounts.some((mount) => mount.guard)) await startRepoViews(ctx.paths.stateDir, name, record.spec.mounts, record.hostUidBase, requireRepoFs(ctx));
    const vm = runtimeVm(ctx, name, record);
    await ctx.runtime.prepareStart(vm);
    // A VM made with the agent gets its listener at every boot (without one, its agent stays idle).
    const socket = ctx.paths.agentSocket(name);
    // A Unix socket's path has at most 107 bytes: a deeper state dir runs its commands with crun exec.
    const agent = record.execAgent && ctx.execAgent && Buffer.byteLength(socket) < 108 ? { binary: ctx.execAgent, socket } : undefined;
    await ctx.runtime.startDetached(vm.id, ctx.paths.bundleDir(name), pidFile, join(ctx.paths.vmDir(name), `${ctx.runtime.name}.log`), agent);
    const pid = Number(readFileSync(pidFile, "utf8").trim());
    const startTime = processStartTime(pid);
    if (!startTime) throw new Error(`VM exited right after it started (pid ${pid})`);
    ctx.store.setRunning(name, { pid, startTime });
    // Before any command runs: each session mount must be what the spec pinned (see verify-mounts.ts).
    const problems = await ctx.runtime.checkStarted(vm, pid);
    if (problems.length > 0) {
      await powerOff(ctx, name, record.cgroupPath);
      throw new RuntimeError("FAILED", `VM ${name} was stopped before any command ran, because its mounts are not what was pinned: ${problems.join("; ")}`);
    }
  } catch (error) {
    throw failed("start", name, error);
  }
}

/** Kills every process of the VM, removes its exec sub-cgroups, crun state and cgroups. */
async function powerOff(ctx: DriverContext, name: string, cgroupPath: string): Promise<void> {
  const { layout } = ctx;
  ctx.store.setRunning(name, undefined);
  // Killing the whole cgroup tree (not just PID 1) also covers a VM whose crun state was lost. The bound is
  // for a loaded machine: a gVisor VM's Sentry and gofer took over 5 s to leave their cgroup in a CI run.
  if (!(await killCgroup(layout, cgroupPath, POWER_OFF_KILL_MS))) throw new Error(`processes of VM ${name} survived SIGKILL`);
  for (const sub of listSubCgroups(layout, cgroupPath)) removeCgroup(layout, `${cgroupPath}/${sub}`);
  await ctx.runtime.delete(ctx.paths.containerId(name));
  await ctx.runtime.release({ name });
  await stopRepoViews(ctx.paths.stateDir, name);
  // crun removes the VM's cgroups itself; this covers a delete of a container crun no longer knew.
  if (!vmCgroupGone(layout, cgroupPath) && !removeCgroup(layout, cgroupPath)) {
    throw new Error(`cgroup ${cgroupPath} of VM ${name} could not be removed`);
  }
}

export async function stopVm(ctx: DriverContext, name: string): Promise<void> {
  const record = ctx.store.read(name);
  if (!record) return;
  try {
    await powerOff(ctx, name, record.cgroupPath);
    rmSync(ctx.paths.execDir(name), { recursive: true, force: true });
  } catch (error) {
    throw failed("stop", name, error);
  }
}

/**
 * Stops the VM and deletes everything it has on the host. The volume goes first and the VM record
 * last, so a crash part-way leaves a VM that list() still shows and a retried remove finishes.
 */
export async function removeVm(ctx: DriverContext, name: string, options: { keepVolume?: boolean } = {}): Promise<void> {
  const record = ctx.store.read(name);
  try {
    await powerOff(ctx, name, record?.cgroupPath ?? ctx.paths.cgroupPath(name));
    if (record && !options.keepVolume) await ctx.volumes.remove(record.spec.volume.name);
    rmSync(ctx.paths.vmDir(name), { recursive: true, force: true });
    // A removal is nobody's wait: the time to format the spare the next new volume takes.
    if (record && !options.keepVolume) ctx.volumes.disks.spares.refill(record.spec.diskMib ?? DEFAULT_DISK_MIB);
  } catch (error) {
    throw failed("remove", name, error);
  }
}
