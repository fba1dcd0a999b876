// Runs the RuntimeDriver contract suite against the gvisor driver (runsc, ptrace platform).
import { runtimeContractSuite } from "./contract-suite";
import { expectNoGvisorLeaksAndCleanUp, hostCpuStats, makeGvisorFixture } from "./gvisor-target";
import type { LocalFixture } from "./local-target";

let fixture: LocalFixture | undefined;

runtimeContractSuite("gvisor", {
  async setup() {
    fixture = await makeGvisorFixture();
    return { driver: fixture.driver, image: fixture.image };
  },
  async teardown() {
    if (fixture) expectNoGvisorLeaksAndCleanUp(fixture);
  },
  exhaustion: "vm",
  hostCpuStats: (name) => hostCpuStats(fixture!, name),
});
