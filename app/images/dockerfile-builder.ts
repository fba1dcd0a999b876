// The manager's Dockerfile builder: each build gets a place under the cap of running VMs (the supervisor's
// admitBuild), a gVisor VM named after the content it builds, and the manager's label, so that a build a
// crash cut short is found and removed by startup recovery like any VM of no session. Its RUN steps reach
// the network as the session that started the build may (build-egress.ts).
import { randomHex } from "../../runtime/bun-crypto";
import type { RuntimeDriver } from "../../runtime/driver";
import type { BuildEgress } from "./build-egress";
import { MANAGED_LABELS } from "../vm-identity";
import { buildFromDockerfile } from "./dockerfile-build";
import type { DockerfileBuilder } from "./image-service";

/** The build VM's memory: its writes live there too (VmSpec.scratchWrites), so it bounds what one build may write. */
const BUILD_MEMORY_MIB = 2048;
/** One step's limit: a RUN that installs a toolchain may take a while; a hung one fails the build. */
const BUILD_STEP_TIMEOUT_MS = 30 * 60 * 1000;

export const NO_BUILD_TIER =
  "a Dockerfile image is built inside a gVisor VM (its RUN steps never run on the host), and the gVisor tier is not available to this manager (GET /api/health says why): install it with scripts/install-runtime-deps.sh, or choose an OCI or recipe image";

/** `makeDriver` is called once, at the first build: a manager that never builds never makes the driver. */
export function dockerfileBuilderOn(makeDriver: () => Promise<RuntimeDriver>, slots: { admitBuild(): Promise<() => void> }, egress: BuildEgress): DockerfileBuilder {
  let driver: Promise<RuntimeDriver> | undefined;
  return async (job) => {
    const release = await slots.admitBuild();
    const vmName = `build-${job.digest.slice("sha256:".length, "sha256:".length + 12)}-${randomHex(2)}`;
    try {
      const { session, ...rest } = job;
      await buildFromDockerfile({
        ...rest,
        driver: await (driver ??= makeDriver()),
        vmName,
        // Each stage's VM boots from its own base: its CA bundle is that image's store and the manager's.
        network: (baseRootfs) => egress.open(vmName, session, baseRootfs),
        labels: { ...MANAGED_LABELS, "session-sandbox.build": "dockerfile" },
        cpus: 1,
        memoryMib: BUILD_MEMORY_MIB,
        stepTimeoutMs: BUILD_STEP_TIMEOUT_MS,
      });
    } finally {
      await egress.close(vmName).catch(() => undefined); // after the VM's removal (buildFromDockerfile's own finally)
      release();
    }
  };
}
