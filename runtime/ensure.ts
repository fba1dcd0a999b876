// The one lifecycle every driver offers the session actor: make the VM named by a spec run that spec,
// reusing what can be reused and never losing the data volume. Written once over the driver's own
// primitives (inspect, attest, create, start) so every runtime converges the same way.
import { RuntimeError, type EnsureResult, type RuntimeDriver, type VmSpec } from "./driver";

type Primitives = Pick<RuntimeDriver, "inspect" | "attest" | "create" | "start">;

export async function ensureVm(driver: Primitives, spec: VmSpec): Promise<EnsureResult> {
  const current = await driver.inspect(spec.name);
  if (!current) {
    try {
      return { info: await driver.create(spec), action: "created", mismatches: [] };
    } catch (error) {
      // inspect saw nothing, yet the name is taken: what a crash mid-create leaves (local: a VM directory
      // without its record; msb: a registered name list/inspect do not show). Replace it, keeping the volume.
      if (!(error instanceof RuntimeError && error.code === "ALREADY_EXISTS")) throw error;
      return { info: await driver.create(spec, { replace: true }), action: "replaced-orphan", mismatches: [] };
    }
  }
  const verdict = driver.attest(spec, current);
  if (!verdict.ok) return { info: await driver.create(spec, { replace: true }), action: "recreated", mismatches: verdict.mismatches };
  if (current.status === "running") return { info: current, action: "reused", mismatches: [] };
  await driver.start(spec.name);
  return { info: { ...current, status: "running" }, action: "started", mismatches: [] };
}
