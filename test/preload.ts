// bunfig has no timeout key; the runtime suites boot real VMs, which takes longer than bun's 5 s default.
import { setDefaultTimeout } from "bun:test";

setDefaultTimeout(60_000);
