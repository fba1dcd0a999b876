// Startup recovery: the runtime's list of our VMs (by label) is the truth after a crash. VMs of sessions
// that are still sandboxed are adopted; the rest (deleted, toggled off, sandboxing disabled) are removed.
import type { RuntimeDriver } from "../../runtime/driver";
import type { StopReason } from "../../workers/protocol";
import type { Logger } from "../log";
import type { Manager } from "../manager";
import { MANAGED_LABELS } from "../vm-identity";

export async function recoverVms(driver: RuntimeDriver, { services, supervisor }: Pick<Manager, "services" | "supervisor">, log?: Logger): Promise<void> {
  const incomplete = (await driver.cleanUpIncomplete?.()) ?? [];
  if (incomplete.length > 0) log?.warn("removed what a crash left half-created", { removed: incomplete });
  const found = await driver.list(MANAGED_LABELS);
  await supervisor.recover(found, (rootSessionID): StopReason | "keep" => {
    if (!rootSessionID) return "recovery";
    try {
      return services.sessionSandbox.get(rootSessionID).sandboxed ? "keep" : services.settings.get().enabled ? "toggle-off" : "disabled";
    } catch {
      return "deleted"; // the session is gone (or its chain is broken): its VM must not linger
    }
  });
  await removeOrphanVolumes(driver, { services, supervisor }, new Set((await driver.list({})).map((vm) => vm.spec.volume.name)), log);
}

/**
 * A volume with no VM (a crash during a recreate) is kept for a root session that is still sandboxed:
 * the supervisor adopts it like a stopped VM, so its next command reuses the data and the sweep removes
 * it when idle. Any other orphaned volume is removed now.
 */
async function removeOrphanVolumes(driver: RuntimeDriver, { services, supervisor }: Pick<Manager, "services" | "supervisor">, inUse: Set<string>, log?: Logger): Promise<void> {
  if (!driver.listVolumes || !driver.removeVolume) return;
  const wanted = new Map(
    services.sessions
      .list()
      .filter((session) => session.parentID === null)
      .map((session) => services.sessionSandbox.get(session.id))
      .filter((view) => view.sandboxed)
      .map((view) => [view.vmName, view.rootSessionID] as const),
  );
  for (const volume of await driver.listVolumes()) {
    if (inUse.has(volume)) continue;
    const rootSessionID = wanted.get(volume);
    if (rootSessionID) {
      supervisor.adoptOrphanVolume(volume, rootSessionID);
      continue;
    }
    await driver.removeVolume(volume);
    log?.info("removed an orphaned volume", { volume });
  }
}
