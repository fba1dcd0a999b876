// What the repository attack suites share: a fixture of one embedded tier and a scratch dir for the suite,
// both cleaned up after it, and VMs booted with the mounts the manager makes for a session's directory.
import { afterAll, beforeAll } from "bun:test";
import { rmSync } from "node:fs";
import { mountsOf, pinSessionMounts } from "../../app/services/mounts";
import type { LocalFixture } from "../runtime/local-target";
import { makeTempDir } from "../helpers";

export type RepositoryFixture = {
  fixture(): LocalFixture;
  scratch(): string;
  /** A VM named `name` of this tier, mounting what the manager mounts for a session in `directory`. */
  boot(name: string, directory: string): Promise<string>;
};

/** Call inside a describe: sets up before its tests, removes every VM and the scratch dir after them. */
export function useRepositoryFixture(make: () => Promise<LocalFixture>, cleanUp: (fixture: LocalFixture) => void, prefix: string): RepositoryFixture {
  let fixture: LocalFixture | undefined;
  let scratch = "";
  beforeAll(async () => {
    fixture = await make();
    scratch = makeTempDir(prefix);
  }, 600_000);
  afterAll(async () => {
    if (!fixture) return;
    for (const vm of await fixture.driver.list({})) await fixture.driver.remove(vm.name);
    cleanUp(fixture);
    rmSync(scratch, { recursive: true, force: true });
  }, 120_000);
  return {
    fixture: () => fixture!,
    scratch: () => scratch,
    async boot(name, directory) {
      const { driver, image, stateDir } = fixture!;
      const pins = pinSessionMounts(directory, { dataDir: stateDir, runtimeDir: stateDir });
      await driver.create({ name, image, cpus: 1, memoryMib: 256, mounts: mountsOf(pins, []).mounts, tmpSizeMib: 16, volume: { name }, labels: {}, network: { mode: "none" } });
      return name;
    },
  };
}
