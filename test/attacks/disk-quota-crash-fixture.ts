// Child process for the crash test in disk-quota.test.ts: creates VMs with a disk quota, one after the
// other, until the test kills it (SIGKILL) part-way through one. Argv: stateDir image cgroupParent prefix.
import { createLocalDriver } from "../../runtime/local/index";

const [stateDir = "", image = "", cgroupParent = "", prefix = ""] = process.argv.slice(2);
const driver = createLocalDriver({ stateDir, rootfsDir: image, cgroupParent });
await driver.stop("warm-up"); // runs the probe first, so that the kill lands inside a create
for (let i = 0; ; i++) {
  const name = `${prefix}-${i}`;
  process.stdout.write(`creating ${name}\n`);
  await driver.create({ name, image, cpus: 1, memoryMib: 256, mounts: [], tmpSizeMib: 16, volume: { name }, labels: {}, network: { mode: "none" }, diskMib: 64 });
}
