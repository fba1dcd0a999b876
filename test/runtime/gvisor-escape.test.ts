// Escape attempts from inside a gvisor (runsc) VM: the escape suite with gVisor's Sentry as the guest's kernel.
import { escapeSuite } from "./escape-suite";
import { expectNoGvisorLeaksAndCleanUp, makeGvisorFixture } from "./gvisor-target";

escapeSuite("gvisor", { kernel: "sentry", makeFixture: makeGvisorFixture, cleanUp: expectNoGvisorLeaksAndCleanUp });
