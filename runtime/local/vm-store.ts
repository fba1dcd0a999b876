// Persisted VM records (the spec as created, its uid range) and the live "is it running" check.
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import type { VmInfo, VmSpec } from "../driver";
import type { StatePaths } from "./state-paths";
import { repoViewsAlive } from "../repo-fs/repo-views";
import { processAlive } from "../proc-stat";

export type VmRecord = {
  spec: VmSpec;
  createdAt: number;
  hostUidBase: number;
  cgroupPath: string;
  /** The VM was created with the exec agent (exec-agent.c) beside its init; older VMs and gVisor's have none. */
  execAgent?: boolean;
};
/** PID 1 of the running VM, plus its start time so a recycled pid is never mistaken for it. */
type RuntimeRecord = { pid: number; startTime: string };

function writeJsonAtomic(path: string, value: unknown): void {
  writeFileSync(`${path}.tmp`, JSON.stringify(value, null, 1), { mode: 0o600 });
  renameSync(`${path}.tmp`, path);
}

function readJson<T>(path: string): T | undefined {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as T;
  } catch {
    return undefined;
  }
}

export class VmStore {
  constructor(private readonly paths: StatePaths) {}

  read(name: string): VmRecord | undefined {
    return readJson<VmRecord>(this.paths.vmRecord(name));
  }

  write(name: string, record: VmRecord): void {
    writeJsonAtomic(this.paths.vmRecord(name), record);
  }

  setRunning(name: string, runtime: RuntimeRecord | undefined): void {
    if (runtime) writeJsonAtomic(this.paths.runtimeRecord(name), runtime);
    else rmSync(this.paths.runtimeRecord(name), { force: true });
  }

  /**
   * PID 1 of the VM if it is alive right now. A zombie is not: the VM's init has exited, and whoever
   * adopted it (init, which on some hosts reaps late) has not collected it yet.
   */
  livePid(name: string): number | undefined {
    const runtime = readJson<RuntimeRecord>(this.paths.runtimeRecord(name));
    if (!runtime) return undefined;
    return processAlive(runtime.pid, runtime.startTime) ? runtime.pid : undefined;
  }

  info(name: string): VmInfo | undefined {
    const record = this.read(name);
    if (!record) return undefined;
    // A VM whose repository view died has lost its repository: stopped, so the next command boots it again.
    const running = this.livePid(name) !== undefined && repoViewsAlive(this.paths.stateDir, name);
    return { name, status: running ? "running" : "stopped", spec: record.spec, createdAt: record.createdAt };
  }

  names(): string[] {
    if (!existsSync(this.paths.vmsDir)) return [];
    return readdirSync(this.paths.vmsDir).filter((n) => existsSync(this.paths.vmRecord(n)));
  }
}
