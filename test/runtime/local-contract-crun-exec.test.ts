// The RuntimeDriver contract suite on the local driver with its exec agent switched off
// (SANDBOX_EXEC_AGENT=off): every command through `crun exec`, the path VMs made without the agent and
// terminals take, and the one every command falls back to when the agent cannot take it.
import { createLocalDriver } from "../../runtime/local/index";
import { runtimeContractSuite } from "./contract-suite";
import { expectNoLeaksAndCleanUp, makeLocalFixture, type LocalFixture } from "./local-target";

let fixture: LocalFixture | undefined;

runtimeContractSuite("local, crun exec", {
  async setup() {
    fixture = await makeLocalFixture((options) => createLocalDriver({ ...options, execAgent: false }));
    return { driver: fixture.driver, image: fixture.image };
  },
  async teardown() {
    if (fixture) expectNoLeaksAndCleanUp(fixture);
  },
});
