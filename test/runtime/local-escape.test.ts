// Escape attempts from inside a local (crun) VM: the escape suite with the host kernel shared.
import { escapeSuite } from "./escape-suite";
import { expectNoLeaksAndCleanUp, makeLocalFixture } from "./local-target";

escapeSuite("local", { kernel: "shared", makeFixture: () => makeLocalFixture(), cleanUp: expectNoLeaksAndCleanUp });
