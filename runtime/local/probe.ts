// The capability probe: every missing piece of the local runtime, each with the command that fixes it.
import { existsSync, readFileSync } from "node:fs";
import type { Capability } from "../driver";
import { describeLayout, missingControllers, type CgroupLayout } from "./cgroup-layout";
import { diskTool } from "./disk-image";
import { raiseHostInotifyLimits } from "./inotify-limits";
import type { Crun } from "./crun";
import { BUILD_ROOTFS_SCRIPT, INSTALL_DEPS_SCRIPT, rootfsReady } from "./rootfs";

type ProbeInput = {
  crun: Crun;
  crunPath: string | null;
  initPath: string;
  unsharePath: string | null;
  layout: CgroupLayout | undefined;
  rootfsDir: string | undefined;
};

/** crun < 1.8 lacks custom idmap mappings on bind mounts, which the repository ownership relies on. */
function versionAtLeast(version: string, major: number, minor: number): boolean {
  const [a = 0, b = 0] = version.split(".").map(Number);
  return a > major || (a === major && b >= minor);
}

export async function probeLocal(input: ProbeInput): Promise<Capability> {
  const problems: Capability["problems"] = [];
  const deps = `sudo ${INSTALL_DEPS_SCRIPT}`;
  let crunVersion: string | undefined;
  if (!input.crunPath) problems.push({ what: "crun is not installed", fix: deps });
  else {
    crunVersion = await input.crun.version();
    if (!crunVersion) problems.push({ what: `crun at ${input.crunPath} does not run`, fix: deps });
    else if (!versionAtLeast(crunVersion, 1, 8)) problems.push({ what: `crun ${crunVersion} is older than 1.8`, fix: "apt-get install -y 'crun>=1.8' (Debian 12 or newer)" });
  }
  problems.push(...hostProblems(input));
  const { layout } = input;
  const version = `local (crun ${crunVersion ?? "missing"}, ${layout ? describeLayout(layout) : "no cgroups"})`;
  return { available: problems.length === 0, version, problems };
}

/** What every embedded tier (crun or runsc) needs of the host: root, init, cgroups, volumes' disks, user namespaces, the rootfs. */
export function hostProblems(input: Pick<ProbeInput, "initPath" | "unsharePath" | "layout" | "rootfsDir">): Capability["problems"] {
  const problems: Capability["problems"] = [];
  const deps = `sudo ${INSTALL_DEPS_SCRIPT}`;
  if (process.getuid?.() !== 0) {
    problems.push({ what: "not running as root (namespaces, cgroups and idmapped mounts need it)", fix: "run the manager as root" });
  }
  if (!existsSync(input.initPath)) problems.push({ what: `tini-static missing at ${input.initPath}`, fix: deps });
  const { layout } = input;
  if (!layout) problems.push({ what: "no cgroup filesystem is mounted", fix: "mount -t cgroup2 none /sys/fs/cgroup" });
  else {
    for (const controller of missingControllers(layout)) {
      problems.push({
        what: `cgroup controller "${controller}" is not available (${describeLayout(layout)})`,
        fix: layout.kind === "v2"
          ? `enable it at boot (kernel command line cgroup_enable=${controller}) and run: echo +${controller} > ${layout.unifiedRoot}/cgroup.subtree_control`
          : `mkdir -p /sys/fs/cgroup/${controller} && mount -t cgroup -o ${controller} cgroup /sys/fs/cgroup/${controller}`,
      });
    }
    if (layout.kind === "hybrid" && !input.unsharePath) problems.push({ what: "unshare (util-linux) is missing; needed on hybrid cgroup hosts", fix: deps });
  }
  // The probe runs when a driver first starts: size host root's inotify quota for every VM at once. Best
  // effort; the doctor reports limits that are still too low, with the fix (inotify-limits.ts).
  if (process.getuid?.() === 0) raiseHostInotifyLimits();
  // Each volume's disk quota is a loop-mounted ext4 image (volume-disks.ts).
  for (const tool of ["mkfs.ext4", "e2fsck", "resize2fs", "mount", "umount", "losetup"]) {
    if (!diskTool(tool)) problems.push({ what: `${tool} is missing; volume disk quotas need it`, fix: deps });
  }
  if (!existsSync("/dev/loop-control")) problems.push({ what: "no loop devices (/dev/loop-control); volume disk quotas need them", fix: "modprobe loop" });
  if (readUserNamespaceLimit() === 0) {
    problems.push({ what: "user namespaces are disabled (user.max_user_namespaces = 0)", fix: "sysctl -w user.max_user_namespaces=15000" });
  }
  if (input.rootfsDir && !rootfsReady(input.rootfsDir)) {
    problems.push({ what: `root filesystem not built at ${input.rootfsDir}`, fix: `sudo ${BUILD_ROOTFS_SCRIPT}` });
  }
  return problems;
}

function readUserNamespaceLimit(): number | undefined {
  try {
    return Number(readFileSync("/proc/sys/user/max_user_namespaces", "utf8"));
  } catch {
    return undefined;
  }
}
