// Runs the runsc CLI (gVisor) for the gvisor tier: one private state root per driver, the ptrace platform
// (no usable KVM here), no network but the Sentry's own loopback, and host Unix sockets openable through
// binds (the egress proxy's socket, nothing else is bound). Errors come from runsc's JSON log.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { cgroupDirs, type CgroupLayout } from "../local/cgroup-layout";
import { egressSocketOf } from "../driver";
import { readLog, tcpListening } from "../local/crun";
import { GUEST_PROXY_PORT, type OciConfig } from "../local/oci-config";
import type { OciRuntime, RuntimeConfig, RuntimeVm } from "../local/oci-runtime";
import { mountProblems } from "../local/verify-mounts";
import { processExited } from "../proc-stat";
import { bootFlagsOf, gvisorConfig, hostMountsDir, hostMountsOf } from "./gvisor-config";
import type { GuestBinaries } from "./guest-binaries";
import { attachHostMounts, releaseHostMounts } from "./host-mounts";

type RunscOptions = { runscPath: string; runscRoot: string; stateDir: string; layout: CgroupLayout | undefined; binaries: () => GuestBinaries };
type RunscResult = { exitCode: number; stdout: string; stderr: string };

/**
 * runsc resolves a container id by prefix and refuses an ambiguous one (VM `ct-2` beside `ct-21`), so its
 * ids end in "+", which VM names cannot hold: no id is then a prefix of another.
 */
export function runscId(containerId: string): string {
  return `${containerId}+`;
}

/** Flags every runsc command of this driver shares (runsc keeps them with the sandbox's state too). */
const GLOBAL_FLAGS = ["--platform=ptrace", "--network=none", "--host-uds=open"];

/** What runsc's state file says of a sandbox: its processes (the Sentry, the gofer) and its control socket. */
function readSandboxState(root: string, id: string): { pids: number[]; controlSocket: string | undefined } | undefined {
  try {
    const state = JSON.parse(readFileSync(join(root, `${id}_sandbox:${id}.state`), "utf8")) as { goferPid?: number; sandbox?: { pid?: number; controlSocketPath?: string } };
    const pids = [state.sandbox?.pid, state.goferPid].filter((pid): pid is number => Number.isInteger(pid) && pid! > 0);
    // Without the sandbox's pid there is no knowing it has exited: runsc delete decides.
    return state.sandbox?.pid ? { pids, controlSocket: state.sandbox.controlSocketPath } : undefined;
  } catch {
    return undefined;
  }
}

export class Runsc implements OciRuntime {
  readonly name = "runsc";
  /** runsc's `--overlay2=all:memory`: an overlay on every mount whose upper layer is the Sentry's memory. */
  readonly keepsWritesInMemory = true;
  /** A daemon's mounts, namespaces and cgroups are the Sentry's own (docker-profile.ts). */
  readonly holdsDocker = true;
  constructor(private readonly options: RunscOptions) {}

  argv(args: string[]): string[] {
    return [this.options.runscPath, "--root", this.options.runscRoot, ...GLOBAL_FLAGS, ...args];
  }

  async run(args: string[]): Promise<RunscResult> {
    const proc = Bun.spawn(this.argv(args), { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { exitCode, stdout, stderr };
  }

  adaptConfig(config: OciConfig, vm: RuntimeVm): RuntimeConfig {
    return gvisorConfig(config, vm, { stateDir: this.options.stateDir, binaries: this.options.binaries() });
  }

  async prepareStart(vm: RuntimeVm): Promise<void> {
    const config = JSON.parse(readFileSync(join(vm.bundleDir, "config.json"), "utf8")) as RuntimeConfig;
    await attachHostMounts(hostMountsDir(this.options.stateDir, vm.name), hostMountsOf(config));
  }

  async release(vm: Pick<RuntimeVm, "name">): Promise<void> {
    releaseHostMounts(hostMountsDir(this.options.stateDir, vm.name));
  }

  /** Prepared mounts of VMs whose directory is gone (a crash between remove's steps), detached and removed. */
  async cleanUpLeftovers(vmNames: string[]): Promise<string[]> {
    const dir = hostMountsDir(this.options.stateDir, "");
    if (!existsSync(dir)) return [];
    const known = new Set(vmNames);
    const removed: string[] = [];
    for (const name of readdirSync(dir).filter((entry) => !known.has(entry))) {
      releaseHostMounts(hostMountsDir(this.options.stateDir, name));
      removed.push(`gvisor host mounts of ${name}`);
    }
    return removed;
  }

  /**
   * `runsc run --detach`; the pid file gets the sandbox (Sentry) process. Like crun, runsc hands its stdio
   * to the container's init, so it gets /dev/null and reports through --log.
   */
  async startDetached(id: string, bundleDir: string, pidFile: string, logFile: string): Promise<void> {
    rmSync(logFile, { force: true });
    mkdirSync(this.options.runscRoot, { recursive: true, mode: 0o700 });
    const config = JSON.parse(readFileSync(join(bundleDir, "config.json"), "utf8")) as RuntimeConfig;
    const argv = this.argv([...bootFlagsOf(config), "--log", logFile, "--log-format", "json", "run", "--detach", "--bundle", bundleDir, "--pid-file", pidFile, runscId(id)]);
    const exitCode = await Bun.spawn(argv, { stdin: "ignore", stdout: "ignore", stderr: "ignore" }).exited;
    if (exitCode !== 0) throw new Error(`runsc run failed (exit ${exitCode}): ${readLog(logFile) || "no message"}`);
  }

  /**
   * The guest's mounts are set up by runsc's gofer, in its own mount namespace, at the guest's paths:
   * verify-mounts.ts checks them there (source, flags, pinned inode). The gofer is found among the
   * processes of the VM's cgroup, which the guest cannot add to.
   */
  async checkStarted(vm: RuntimeVm, pid: number): Promise<string[]> {
    if (vm.spec.mounts.length > 0) {
      const gofer = this.goferPid(vm.cgroupPath, pid);
      if (gofer === undefined) return [`the gofer of VM ${vm.name} was not found in its cgroup`];
      const problems = mountProblems(gofer, vm.spec.mounts, vm.sources);
      if (problems.length > 0) return problems;
    }
    if (egressSocketOf(vm.spec)) await this.waitForGuestListener(runscId(vm.id), GUEST_PROXY_PORT);
    return [];
  }

  private goferPid(cgroupPath: string, sandboxPid: number): number | undefined {
    const { layout } = this.options;
    if (!layout) return undefined;
    for (const dir of cgroupDirs(layout, cgroupPath)) {
      let pids: number[];
      try {
        pids = readFileSync(`${dir}/cgroup.procs`, "utf8").split("\n").filter(Boolean).map(Number);
      } catch {
        continue;
      }
      for (const pid of pids) {
        if (pid === sandboxPid) continue;
        try {
          if (readFileSync(`/proc/${pid}/cmdline`, "utf8").startsWith("runsc-gofer\0")) return pid;
        } catch {
          // Gone meanwhile.
        }
      }
    }
    return undefined;
  }

  /** The guest's loopback lives in the Sentry's network stack, invisible from the host: ask the guest's /proc. */
  private async waitForGuestListener(id: string, port: number, timeoutMs = 5_000): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (performance.now() < deadline) {
      const { exitCode, stdout } = await this.run(["exec", id, "cat", "/proc/net/tcp"]);
      if (exitCode === 0 && tcpListening(stdout, port)) return;
      await Bun.sleep(10);
    }
    throw new Error(`the egress forwarder did not start listening on 127.0.0.1:${port} within ${timeoutMs} ms`);
  }

  /**
   * `delete --force` kills what is left and removes runsc's state (`<root>/<id>_sandbox:<id>.state` and
   * its lock). Without such files there is nothing to delete and the spawn is skipped.
   */
  async delete(containerId: string): Promise<void> {
    const id = runscId(containerId);
    const root = this.options.runscRoot;
    const stateFiles = () => (existsSync(root) ? readdirSync(root).filter((f) => f.startsWith(`${id}_sandbox:`)) : []);
    if (stateFiles().length === 0) return;
    const state = readSandboxState(root, id);
    // runsc delete waits, polling, until the sandbox's pid is gone: reaped by its parent, which (runsc
    // create having exited) is init, and an init that reaps late held every stop and removal that long
    // (docs/performance.md). When every process the state names has exited, what is left is files: removed here.
    if (!state || !state.pids.every(processExited)) {
      const { exitCode, stderr } = await this.run(["delete", "--force", id]);
      if (exitCode !== 0 && !/does not exist|not found/i.test(stderr)) throw new Error(`runsc delete ${id} failed (exit ${exitCode}): ${stderr.trim()}`);
    }
    // Also what a container whose sandbox died leaves and runsc delete does not always remove.
    if (state?.controlSocket) rmSync(state.controlSocket, { force: true });
    for (const file of stateFiles()) rmSync(join(root, file), { force: true });
  }

  async version(): Promise<string | undefined> {
    try {
      const proc = Bun.spawn([this.options.runscPath, "--version"], { stdin: "ignore", stdout: "pipe", stderr: "ignore" });
      const [stdout, exitCode] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
      return exitCode === 0 ? /runsc version (\S+)/.exec(stdout)?.[1] : undefined;
    } catch {
      return undefined;
    }
  }
}
