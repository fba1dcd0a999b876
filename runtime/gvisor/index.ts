// The `gvisor` runtime driver: the local driver's VMs — same bundle, guest root, mounts, volumes, uid
// blocks, cgroup limits, records and recovery — run under runsc (gVisor) instead of crun, so the guest's
// system calls reach gVisor's user-space kernel (the Sentry) instead of the host kernel. What differs is
// in this folder: runsc.ts (the runtime), gvisor-config.ts (the config changes), exec.ts (commands and
// their kill), terminal.ts (finding the shell's PTY), host-mounts.ts (idmapped mounts runsc cannot make),
// and seccomp-exec.c (the seccomp filter on every guest process).
import { join } from "node:path";
import { createLocalDriver, type LocalDriver, type LocalDriverOptions } from "../local/index";
import { execInSandbox } from "./exec";
import { probeGvisor } from "./probe";
import { Runsc } from "./runsc";
import { ensureGuestBinaries, type GuestBinaries } from "./guest-binaries";
import { RUNSC_TERMINAL } from "./terminal";

type GvisorDriverOptions = LocalDriverOptions & { runscPath?: string };

export function createGvisorDriver(options: GvisorDriverOptions): LocalDriver {
  return createLocalDriver(options, ({ paths, layout, initPath }) => {
    const runscPath = Bun.which(options.runscPath ?? "runsc");
    const unsharePath = Bun.which("unshare");
    let binaries: GuestBinaries | undefined;
    const runsc = new Runsc({
      runscPath: runscPath ?? "runsc",
      runscRoot: join(paths.stateDir, "runsc"),
      stateDir: paths.stateDir,
      layout,
      binaries: () => (binaries ??= ensureGuestBinaries(paths.stateDir)),
    });
    return {
      driverName: "gvisor",
      runtime: runsc,
      probe: () => probeGvisor({ runsc, runscPath, initPath, unsharePath, layout, rootfsDir: options.rootfsDir, stateDir: paths.stateDir }),
      ping: async () => runscPath !== null && (await runsc.version()) !== undefined,
      exec: (ctx, name, request, sink) => execInSandbox(ctx, name, request, sink),
      terminal: RUNSC_TERMINAL,
    };
  });
}
