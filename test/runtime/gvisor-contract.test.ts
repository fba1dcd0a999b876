// Runs the RuntimeDriver contract suite against the gvisor driver (runsc, ptrace platform).
import { fixtureTarget, runtimeContractSuite } from "./contract-suite";
import { expectNoGvisorLeaksAndCleanUp, hostCpuStats, makeGvisorFixture } from "./gvisor-target";

const target = fixtureTarget(makeGvisorFixture, (fixture) => fixture.image, expectNoGvisorLeaksAndCleanUp);

runtimeContractSuite("gvisor", {
  setup: target.setup,
  teardown: target.teardown,
  exhaustion: "vm",
  hostCpuStats: (name) => hostCpuStats(target.fixture(), name),
});
