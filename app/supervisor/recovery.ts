// Startup recovery: the runtime's list of our VMs (by label) is the truth after a crash. VMs of sessions
// that are still sandboxed are adopted; the rest (deleted, toggled off, sandboxing disabled) are removed.
import type { RuntimeDriver } from "../../runtime/driver";
import type { StopReason } from "../../workers/protocol";
import type { Manager } from "../manager";
import { MANAGED_LABEL } from "./vm-records";

export async function recoverVms(driver: RuntimeDriver, { services, supervisor }: Pick<Manager, "services" | "supervisor">): Promise<void> {
  const found = await driver.list({ [MANAGED_LABEL]: "1" });
  await supervisor.recover(found, (rootSessionId): StopReason | "keep" => {
    if (!rootSessionId) return "recovery";
    try {
      return services.sessionSandbox.get(rootSessionId).sandboxed ? "keep" : services.settings.get().enabled ? "toggle-off" : "disabled";
    } catch {
      return "deleted"; // the session is gone (or its chain is broken): its VM must not linger
    }
  });
}
