// Persistent data volumes and the host uid range each one owns.
//
// Each volume gets its own block of 65536 host uids/gids; a VM runs in its volume's block, so files
// in the volume keep the right owner when the VM is recreated, and two sessions' VMs never share a host
// uid. Slots are claimed in the host-wide registry (uid-registry.ts), atomic across Workers, processes and
// managers.
import { chownSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import type { StatePaths } from "./state-paths";
import { UidRegistry } from "./uid-registry";

export const UIDS_PER_VM = 65536;

export type VolumeRecord = { name: string; slot: number; createdAt: number };
/** `registryDir`: the host-wide claims of uid ranges (uid-registry.ts), shared with other managers. */
export type UidPlan = { firstHostUid: number; slots: number; registryDir: string };

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
    const start = createHash("sha256").update(name).digest().readUInt32BE(0) % this.plan.slots;
    for (let i = 0; i < this.plan.slots; i++) {
      const slot = (start + i) % this.plan.slots;
      if (registry.claim(name, this.hostUidBase(slot))) return slot;
    }
    throw new Error(`no free uid range: all ${this.plan.slots} slots are in use on this host`);
  }
}
