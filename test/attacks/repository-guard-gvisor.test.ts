// The attacks on the shared repository, on the gVisor tier (runsc).
import { expectNoGvisorLeaksAndCleanUp, makeGvisorFixture } from "../runtime/gvisor-target";
import { repositoryGenericSuite } from "./repository-generic-suite";
import { repositoryGuardSuite } from "./repository-guard-suite";

repositoryGuardSuite("gvisor", makeGvisorFixture, expectNoGvisorLeaksAndCleanUp);
repositoryGenericSuite("gvisor", makeGvisorFixture, expectNoGvisorLeaksAndCleanUp);
