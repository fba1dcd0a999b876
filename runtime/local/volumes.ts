// Persistent data volumes and the host uid range each one owns.
//
// Each volume gets its own block of 65536 host uids/gids; a VM runs in its volume's block, so files
// in the volume keep the right owner when the VM is recreated, and two sessions' VMs never share a host
// uid. Slots are claimed in the host-wide registry (uid-registry.ts), atomic across Workers, processes and
// managers.
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { sha256 } from "../bun-crypto";
import { join } from "node:path";
import type { StatePaths } from "./state-paths";
import { UidRegistry } from "./uid-registry";
import { VolumeDisks } from "./volume-disks";

export const UIDS_PER_VM = 65536;

/** `diskMib`: the size of the volume's disk (volume-disks.ts); absent for a volume made before disk quotas. */
type VolumeRecord = { name: string; slot: number; createdAt: number; diskMib?: number };
/** `registryDir`: the host-wide claims of uid ranges (uid-registry.ts), shared with other managers. */
type UidPlan = { firstHostUid: number; slots: number; registryDir: string };

export class Volumes {
  readonly disks: VolumeDisks;

  constructor(private readonly paths: StatePaths, private readonly plan: UidPlan) {
    this.disks = new VolumeDisks(paths);
  }

  hostUidBase(slot: number): number {
    return this.plan.firstHostUid + slot * UIDS_PER_VM;
  }

  read(name: string): VolumeRecord | undefined {
    try {
      return JSON.parse(readFileSync(join(this.paths.volumeDir(name), "volume.json"), "utf8")) as VolumeRecord;
    } catch {
      return undefined;
    }
  }

  /**
   * Returns the existing volume of that name (recreation keeps data; a changed `diskMib` resizes its
   * disk) or creates it with a disk of `diskMib`. The disk is mounted by `mount`, at VM start.
   */
  async ensure(name: string, diskMib: number): Promise<{ record: VolumeRecord; created: boolean }> {
    const existing = this.read(name);
    if (existing) return { record: await this.fitDisk(existing, diskMib), created: false };
    const record: VolumeRecord = { name, slot: this.claimSlot(name), createdAt: Date.now(), diskMib };
    try {
      // Parents 0711 (traversable by the VM's uid, not listable), see createLocalDriver.
      mkdirSync(this.paths.volumesDir, { recursive: true, mode: 0o711 });
      mkdirSync(this.paths.volumeDir(name), { recursive: true, mode: 0o711 });
      // Root's until the disk is mounted over it (then the guest root's): unmounted, a guest cannot fill the host.
      mkdirSync(this.paths.volumeData(name), { recursive: true, mode: 0o700 });
      await this.disks.create(name, diskMib);
      // Last: a volume dir without volume.json is a crash leftover (incomplete.ts).
      this.write(record);
    } catch (error) {
      await this.disks.release(name).catch(() => undefined);
      rmSync(this.paths.volumeDir(name), { recursive: true, force: true });
      this.uidRegistry().release(name, this.hostUidBase(record.slot));
      throw error;
    }
    return { record, created: true };
  }

  /** Mounts the volume's disk unless it already is; its root belongs to the VM's root uid. */
  mount(name: string): Promise<void> {
    const record = this.read(name);
    if (!record) return Promise.reject(new Error(`volume ${name} does not exist`));
    // A volume from before disk quotas stays a plain directory until its VM is recreated (fitDisk).
    if (record.diskMib === undefined) return Promise.resolve();
    return this.disks.mount(name, this.hostUidBase(record.slot));
  }

  /** Migrates a volume from before disk quotas, or resizes a disk whose size changed. */
  private async fitDisk(record: VolumeRecord, diskMib: number): Promise<VolumeRecord> {
    if (record.diskMib === diskMib) return record;
    const updated = { ...record, diskMib };
    const hostUid = this.hostUidBase(record.slot);
    if (record.diskMib === undefined) await this.disks.migrate(record.name, diskMib, hostUid, () => this.write(updated));
    else {
      await this.disks.resize(record.name, record.diskMib, diskMib);
      this.write(updated);
    }
    return updated;
  }

  /** Atomically (write, then rename): the record is what says a volume is complete and how big its disk is. */
  private write(record: VolumeRecord): void {
    const file = join(this.paths.volumeDir(record.name), "volume.json");
    writeFileSync(`${file}.tmp`, JSON.stringify(record), { mode: 0o600 });
    renameSync(`${file}.tmp`, file);
  }

  async remove(name: string): Promise<void> {
    const record = this.read(name);
    await this.disks.release(name);
    rmSync(this.paths.volumeDir(name), { recursive: true, force: true });
    if (record) this.uidRegistry().release(name, this.hostUidBase(record.slot));
  }

  /** This state dir's view of the host-wide uid claims. */
  uidRegistry(): UidRegistry {
    return new UidRegistry(this.plan.registryDir, this.paths.stateDir);
  }

  /**
   * Starts at a hash of the name (stable and spread out) and probes linearly for a slot whose uid range no
   * one on the host (this or another manager) has claimed.
   */
  private claimSlot(name: string): number {
    const registry = this.uidRegistry();
    const start = sha256(name).readUInt32BE(0) % this.plan.slots;
    for (let i = 0; i < this.plan.slots; i++) {
      const slot = (start + i) % this.plan.slots;
      if (registry.claim(name, this.hostUidBase(slot))) return slot;
    }
    throw new Error(`no free uid range: all ${this.plan.slots} slots are in use on this host`);
  }
}
