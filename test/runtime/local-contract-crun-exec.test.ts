// The RuntimeDriver contract suite on the local driver with its exec agent switched off
// (SANDBOX_EXEC_AGENT=off): every command through `crun exec`, the path VMs made without the agent and
// terminals take, and the one every command falls back to when the agent cannot take it.
import { createLocalDriver } from "../../runtime/local/index";
import { fixtureTarget, runtimeContractSuite } from "./contract-suite";
import { expectNoLeaksAndCleanUp, makeLocalFixture } from "./local-target";

const withoutAgent = () => makeLocalFixture((options) => createLocalDriver({ ...options, execAgent: false }));

runtimeContractSuite("local, crun exec", fixtureTarget(withoutAgent, (fixture) => fixture.image, expectNoLeaksAndCleanUp));
