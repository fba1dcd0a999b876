// The gvisor driver's terminal: the same suite as the local tier's, on a gVisor VM.
import { expectNoGvisorLeaksAndCleanUp, makeGvisorFixture } from "./gvisor-target";
import { terminalSuite } from "./terminal-suite";

terminalSuite("gvisor", { makeFixture: makeGvisorFixture, cleanUp: expectNoGvisorLeaksAndCleanUp });
