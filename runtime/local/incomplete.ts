// Clean-up after a crash part-way through create or remove: VM dirs without a record, volume dirs
// without a record, and uid slots whose volume never got one. Such leftovers are invisible to list(),
// so only this finds them. Run it only while nothing else drives the same state dir (manager startup).
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { DriverContext } from "./context";
import { removeVm } from "./lifecycle";

function entries(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir) : [];
}

/** Returns what it removed, for the log. Volumes of half-created VMs are kept: they may hold data. */
export async function cleanUpIncomplete(ctx: DriverContext): Promise<string[]> {
  const removed: string[] = [];
  for (const name of entries(ctx.paths.vmsDir)) {
    if (existsSync(ctx.paths.vmRecord(name))) continue;
    await removeVm(ctx, name, { keepVolume: true });
    removed.push(`vm ${name}`);
  }
  for (const name of entries(ctx.paths.volumesDir)) {
    if (existsSync(join(ctx.paths.volumeDir(name), "volume.json"))) continue;
    rmSync(ctx.paths.volumeDir(name), { recursive: true, force: true });
    removed.push(`volume ${name}`);
  }
  for (const slot of entries(ctx.paths.uidSlotsDir)) {
    const file = join(ctx.paths.uidSlotsDir, slot);
    const owner = readFileSync(file, "utf8").trim();
    if (existsSync(join(ctx.paths.volumeDir(owner), "volume.json"))) continue;
    rmSync(file, { force: true });
    removed.push(`uid slot ${slot}`);
  }
  return removed;
}
