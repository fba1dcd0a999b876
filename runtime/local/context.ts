// Everything the driver's operations share, built once by createLocalDriver.
import type { CgroupLayout } from "./cgroup-layout";
import type { OciRuntime } from "./oci-runtime";
import type { StatePaths } from "./state-paths";
import type { VmStore } from "./vm-store";
import type { Volumes } from "./volumes";

export type DriverContext = {
  paths: StatePaths;
  store: VmStore;
  volumes: Volumes;
  /** crun (local tier) or runsc (gvisor tier). */
  runtime: OciRuntime;
  layout: CgroupLayout;
  pidsLimit: number;
  /** Host path of tini-static, bind-mounted as the VM's PID 1. */
  initPath: string;
  /**
   * Host path of the exec agent (exec-agent.c) new VMs run beside their init; none: this tier runs every
   * command with its runtime's exec (gVisor), the agent is switched off, or it could not be built.
   */
  execAgent?: string;
  /** Host path of the VM relay (vm-relay.c) new VMs get bound in; none: it could not be built, the image's socat forwards. */
  relay?: string;
  /** Where the repository view daemon (runtime/repo-fs) is built; default the exec agent's directory. */
  repoFsDir?: string;
};
