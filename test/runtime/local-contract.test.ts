// Runs the RuntimeDriver contract suite against the embedded local driver (crun), commands through its exec
// agent (local-contract-crun-exec.test.ts: the same with every command through `crun exec`).
import { fixtureTarget, runtimeContractSuite } from "./contract-suite";
import { expectNoLeaksAndCleanUp, makeLocalFixture } from "./local-target";

runtimeContractSuite("local", fixtureTarget(() => makeLocalFixture(), (fixture) => fixture.image, expectNoLeaksAndCleanUp));
