// The attacks on the shared repository, on the container tier (crun).
import { expectNoLeaksAndCleanUp, makeLocalFixture } from "../runtime/local-target";
import { repositoryGenericSuite } from "./repository-generic-suite";
import { repositoryGuardSuite } from "./repository-guard-suite";

repositoryGuardSuite("container", () => makeLocalFixture(), expectNoLeaksAndCleanUp);
repositoryGenericSuite("container", () => makeLocalFixture(), expectNoLeaksAndCleanUp);
