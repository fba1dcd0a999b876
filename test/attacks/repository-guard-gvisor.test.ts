// Issue 22's attacks on the shared repository, on the gVisor tier (runsc).
import { expectNoGvisorLeaksAndCleanUp, makeGvisorFixture } from "../runtime/gvisor-target";
import { repositoryGuardSuite } from "./repository-guard-suite";

repositoryGuardSuite("gvisor", makeGvisorFixture, expectNoGvisorLeaksAndCleanUp);
