// Runs the RuntimeDriver contract suite against the embedded local driver (crun), commands through its exec
// agent (local-contract-crun-exec.test.ts: the same with every command through `crun exec`).
import { expectNoLeaksAndCleanUp, makeLocalFixture, type LocalFixture } from "./local-target";
import { runtimeContractSuite } from "./contract-suite";

let fixture: LocalFixture | undefined;

runtimeContractSuite("local", {
  async setup() {
    fixture = await makeLocalFixture();
    return { driver: fixture.driver, image: fixture.image };
  },
  async teardown() {
    if (fixture) expectNoLeaksAndCleanUp(fixture);
  },
});
