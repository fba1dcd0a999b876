// Where a driver keeps its state on the host; none of it is ever mounted into a guest (but the guest root
// and the volume, which are the guest's own).
import { sha256Hex } from "../bun-crypto";
import { join } from "node:path";

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** VM and volume names become directory and cgroup names: no slashes, no leading dot, ≤ 63 chars. */
export function isValidName(name: string): boolean {
  return name.length <= 63 && NAME.test(name);
}

export class StatePaths {
  /** Short tag of the state dir, so two drivers (e.g. tests) never share crun ids or cgroups. */
  readonly tag: string;

  constructor(readonly stateDir: string, private readonly cgroupParent: string) {
    this.tag = sha256Hex(stateDir).slice(0, 8);
  }

  get crunRoot(): string {
    return join(this.stateDir, "crun");
  }
  get vmsDir(): string {
    return join(this.stateDir, "vms");
  }
  get volumesDir(): string {
    return join(this.stateDir, "volumes");
  }
  get uidSlotsDir(): string {
    return join(this.stateDir, "uid-slots");
  }
  /** Formatted volume images kept ready, one per size (see volume-disk.ts). */
  get spareDisksDir(): string {
    return join(this.stateDir, "spare-disks");
  }

  vmDir(name: string): string {
    return join(this.vmsDir, name);
  }
  vmRecord(name: string): string {
    return join(this.vmDir(name), "vm.json");
  }
  runtimeRecord(name: string): string {
    return join(this.vmDir(name), "runtime.json");
  }
  bundleDir(name: string): string {
    return join(this.vmDir(name), "bundle");
  }
  guestRoot(name: string): string {
    return join(this.vmDir(name), "root");
  }
  /** The exec agent's socket: bound here by the host at each boot, handed to the VM as an open listener. */
  agentSocket(name: string): string {
    return join(this.vmDir(name), "agent.sock");
  }
  execDir(name: string): string {
    return join(this.vmDir(name), "exec");
  }
  volumeDir(volume: string): string {
    return join(this.volumesDir, volume);
  }
  volumeData(volume: string): string {
    return join(this.volumeDir(volume), "data");
  }
  /** The volume's fixed-size ext4 image, loop-mounted at volumeData while the volume exists. */
  volumeDisk(volume: string): string {
    return join(this.volumeDir(volume), "disk.img");
  }

  /** crun container id: unique per state dir; crun ids live in this driver's own --root anyway. */
  containerId(name: string): string {
    return name;
  }

  /** Absolute cgroup path (same in every hierarchy). */
  cgroupPath(name: string): string {
    return `/${this.cgroupParent}/${this.tag}.${name}`;
  }

  /** The cgroup every VM cgroup of this state dir is under (shared with other state dirs). */
  get cgroupParentPath(): string {
    return `/${this.cgroupParent}`;
  }

  /**
   * The VM a cgroup under cgroupParentPath belongs to, when it is this state dir's; else undefined. A name
   * no VM could have (e.g. "..", which vmDir would turn into the state dir itself) is nobody's.
   */
  vmOfCgroup(cgroupName: string): string | undefined {
    if (!cgroupName.startsWith(`${this.tag}.`)) return undefined;
    const name = cgroupName.slice(this.tag.length + 1);
    return isValidName(name) ? name : undefined;
  }
}
