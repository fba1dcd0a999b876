// Persistent data volumes and the host uid range each one owns.
//
// Each volume gets its own block of 65536 host uids/gids; a VM runs in its volume's block, so files
// in the volume keep the right owner when the VM is recreated, and two sessions' VMs never share a host
// uid. Slots are claimed with O_EXCL files, which is atomic across Workers and processes.
import { chownSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import type { StatePaths } from "./state-paths";

export const UIDS_PER_VM = 65536;

export type VolumeRecord = { name: string; slot: number; createdAt: number };
export type UidPlan = { firstHostUid: number; slots: number };

export class Volumes {
  constructor(private readonly paths: StatePaths, private readonly plan: UidPlan) {}

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

  /** Returns the existing volume of that name (recreation keeps data) or creates it. */
  ensure(name: string): { record: VolumeRecord; created: boolean } {
    const existing = this.read(name);
    const record: VolumeRecord = existing ?? { name, slot: this.claimSlot(name), createdAt: Date.now() };
    const data = this.paths.volumeData(name);
    if (!existsSync(data)) {
      // Parents 0711 (traversable by the VM's uid, not listable), see createLocalDriver.
      mkdirSync(this.paths.volumesDir, { recursive: true, mode: 0o711 });
      mkdirSync(this.paths.volumeDir(name), { recursive: true, mode: 0o711 });
      mkdirSync(data, { mode: 0o700 });
      // Owned by the guest's root so it can write its HOME; nothing else on the host uses this uid.
      const base = this.hostUidBase(record.slot);
      chownSync(data, base, base);
    }
    if (!existing) writeFileSync(join(this.paths.volumeDir(name), "volume.json"), JSON.stringify(record), { mode: 0o600 });
    return { record, created: !existing };
  }

  remove(name: string): void {
    const record = this.read(name);
    rmSync(this.paths.volumeDir(name), { recursive: true, force: true });
    if (record) rmSync(join(this.paths.uidSlotsDir, String(record.slot)), { force: true });
  }

  /** Starts at a hash of the name (stable and spread out) and probes linearly for a free slot. */
  private claimSlot(name: string): number {
    mkdirSync(this.paths.uidSlotsDir, { recursive: true, mode: 0o700 });
    const start = createHash("sha256").update(name).digest().readUInt32BE(0) % this.plan.slots;
    for (let i = 0; i < this.plan.slots; i++) {
      const slot = (start + i) % this.plan.slots;
      try {
        writeFileSync(join(this.paths.uidSlotsDir, String(slot)), name, { flag: "wx" });
        return slot;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
    }
    throw new Error(`no free uid range: all ${this.plan.slots} slots are in use`);
  }
}
