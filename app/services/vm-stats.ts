// What each VM uses now (CPU seconds, memory, pids, its home volume's disk), read from the runtime at call
// time through a main-thread driver over the actors' state: GET /api/vms/:name/stats, `stats` and /metrics.
import type { RuntimeDriver, VmStats } from "../../runtime/driver";
import { VmNotFoundError } from "../errors";
import type { VmRecord } from "../supervisor/vm-records";

export type VmStatsView = {
  name: string;
  rootSessionID: string | null;
  /** The supervisor's status of the VM (booting, running, stopped…). */
  status: VmRecord["status"];
  /** False when the runtime cannot tell (a tier the host cannot see into, or no runtime); `reason` says why and every number is null. */
  available: boolean;
  reason: string | null;
  /** Cumulative CPU time of the VM's processes; null unless it runs. */
  cpuSeconds: number | null;
  memoryBytes: number | null;
  memoryLimitBytes: number | null;
  pids: number | null;
  pidsLimit: number | null;
  /** The home volume's filesystem (local: the ext4 image); null when the volume is not there. */
  diskUsedBytes: number | null;
  diskSizeBytes: number | null;
  /** When it was read (epoch ms): a CPU percentage is the cpuSeconds difference of two reads over their time. */
  at: number;
};

type VmStatsDeps = {
  /** A main-thread driver of the runtime in use; undefined when none is usable. */
  driver: Promise<RuntimeDriver> | undefined;
  /** Why a driver without usage readings has none (the tier's own reason, or that no runtime is usable). */
  noUsageReason: string;
  vms: () => VmRecord[];
  now?: () => number;
};

export function createVmStats({ driver, noUsageReason, vms, now = Date.now }: VmStatsDeps) {
  function view(record: VmRecord, stats: VmStats | undefined, reason: string | null): VmStatsView {
    const usage = stats?.usage ?? null;
    return {
      name: record.vmName,
      rootSessionID: record.rootSessionID,
      status: record.status,
      available: reason === null,
      reason,
      cpuSeconds: usage?.cpuSeconds ?? null,
      memoryBytes: usage?.memoryBytes ?? null,
      memoryLimitBytes: usage?.memoryLimitBytes ?? null,
      pids: usage?.pids ?? null,
      pidsLimit: usage?.pidsLimit ?? null,
      diskUsedBytes: stats?.disk?.usedBytes ?? null,
      diskSizeBytes: stats?.disk?.sizeBytes ?? null,
      at: now(),
    };
  }

  async function read(record: VmRecord): Promise<VmStatsView> {
    const runtime = await driver;
    if (!runtime?.stats) return view(record, undefined, noUsageReason);
    return view(record, await runtime.stats(record.vmName), null);
  }

  return {
    /** One VM the manager knows; VM_NOT_FOUND otherwise. */
    async of(name: string): Promise<VmStatsView> {
      const record = vms().find((r) => r.vmName === name);
      if (!record) throw new VmNotFoundError(name);
      return read(record);
    },
    /** Every VM the manager knows, by name. */
    all: (): Promise<VmStatsView[]> => Promise.all(vms().toSorted((a, b) => (a.vmName < b.vmName ? -1 : 1)).map(read)),
  };
}

export type VmStatsService = ReturnType<typeof createVmStats>;
