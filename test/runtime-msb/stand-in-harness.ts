// Test wiring for the stand-in msb (a FAKE, see stand-in-msb.ts): a temp MSB_HOME, an executable `msb`
// wrapper that MsbDriver runs as its binary, and the leak checks of the local VMs that play its microVMs.
import { expect } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MsbDriver, type MsbTraceEvent } from "../../runtime/msb";
import { expectNoLeaksAndCleanUp, prepareLocalRuntime } from "../runtime/local-target";
import { STAND_IN_CGROUP_ENV, STAND_IN_ROOTFS_ENV } from "./stand-in-msb";

export type StandInMsb = { driver: MsbDriver; binary: string; msbHome: string; rootfs: string; trace: MsbTraceEvent[]; cleanUp(): void };

function listed(home: string, dir: string): string[] {
  return existsSync(join(home, dir)) ? readdirSync(join(home, dir)) : [];
}

export async function makeStandInMsb(): Promise<StandInMsb> {
  const rootfs = await prepareLocalRuntime();
  const msbHome = mkdtempSync(join(tmpdir(), "stand-in-msb-"));
  // The local VMs' unprivileged uids must traverse MSB_HOME to reach MSB_HOME/local (see createLocalDriver).
  chmodSync(msbHome, 0o711);
  const cgroupParent = `session-sandbox-stand-in-${msbHome.slice(-6)}`;
  const binary = join(msbHome, "msb");
  // The driver gives msb a minimal env (MSB_HOME among it), so the wrapper carries the stand-in's own settings.
  writeFileSync(
    binary,
    `#!/bin/sh\n${STAND_IN_ROOTFS_ENV}='${rootfs}' ${STAND_IN_CGROUP_ENV}='${cgroupParent}' exec '${process.execPath}' '${join(import.meta.dir, "stand-in-msb.ts")}' "$@"\n`,
  );
  chmodSync(binary, 0o755);
  const trace: MsbTraceEvent[] = [];
  const driver = new MsbDriver({ msbPath: binary, msbHome, hostEnv: { PATH: process.env.PATH, HOME: process.env.HOME }, trace: (event) => trace.push(event) });
  return {
    driver,
    binary,
    msbHome,
    rootfs,
    trace,
    cleanUp: () => {
      try {
        // msb's own records (sandboxes, volumes) must be gone too, not only the local VMs that played them.
        expect({ sandboxes: listed(msbHome, "sandboxes"), volumes: listed(msbHome, "volumes") }).toEqual({ sandboxes: [], volumes: [] });
        // The local VMs live in MSB_HOME/local; the leak check needs no driver.
        expectNoLeaksAndCleanUp({ driver: undefined as never, image: rootfs, stateDir: join(msbHome, "local"), cgroupParent });
      } finally {
        rmSync(msbHome, { recursive: true, force: true });
      }
    },
  };
}
