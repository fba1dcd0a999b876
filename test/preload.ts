// Default per-test timeout. The test command also passes `bun test --timeout 120000`, because Bun 1.4.5
// applies setDefaultTimeout from a preload only to the first test file of a run (measured: later files
// fall back to 5 s). Keep both: this one still covers `bun test <one file>` runs.
import { setDefaultTimeout } from "bun:test";

setDefaultTimeout(120_000);
