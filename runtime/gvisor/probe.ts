// The gvisor tier's capability probe: what the embedded driver needs of any host (local/probe.ts), plus
// runsc, a platform it can run on here, and what the tier's own pieces need — each with its fix.
import { existsSync, readFileSync } from "node:fs";
import type { Capability } from "../driver";
import { describeLayout, type CgroupLayout } from "../local/cgroup-layout";
import { hostProblems } from "../local/probe";
import { INSTALL_DEPS_SCRIPT } from "../local/rootfs";
import type { Runsc } from "./runsc";
import { statxShimPath } from "./statx-shim";

export type GvisorProbeInput = {
  runsc: Runsc;
  runscPath: string | null;
  initPath: string;
  unsharePath: string | null;
  layout: CgroupLayout | undefined;
  rootfsDir: string | undefined;
  stateDir: string;
};

/** Yama's ptrace_scope 3 forbids every ptrace; the ptrace platform then cannot run a single guest. */
function ptraceForbidden(): boolean {
  try {
    return readFileSync("/proc/sys/kernel/yama/ptrace_scope", "utf8").trim() === "3";
  } catch {
    return false; // no Yama: ptrace follows plain permissions
  }
}

export async function probeGvisor(input: GvisorProbeInput): Promise<Capability> {
  const deps = `sudo ${INSTALL_DEPS_SCRIPT}`;
  const problems: Capability["problems"] = [];
  let version: string | undefined;
  if (!input.runscPath) problems.push({ what: "runsc (gVisor) is not installed", fix: `apt-get install -y runsc, or ${deps}` });
  else {
    version = await input.runsc.version();
    if (!version) problems.push({ what: `runsc at ${input.runscPath} does not run`, fix: `apt-get install --reinstall -y runsc, or ${deps}` });
  }
  if (ptraceForbidden()) {
    problems.push({ what: "the ptrace platform is unusable: kernel.yama.ptrace_scope is 3 (no ptrace at all)", fix: "sysctl -w kernel.yama.ptrace_scope=1 (needs a reboot once set to 3)" });
  }
  if (!input.unsharePath) problems.push({ what: "unshare (util-linux) is missing; the repository's idmapped mounts need it", fix: deps });
  if (!existsSync(statxShimPath(input.stateDir)) && !Bun.which("gcc")) {
    problems.push({ what: "gcc is missing; it builds the statx shim every gVisor guest preloads (runtime/gvisor/statx-shim.c)", fix: `apt-get install -y gcc, or ${deps}` });
  }
  problems.push(...hostProblems(input));
  const { layout } = input;
  const description = `gvisor (runsc ${version ?? "missing"}, ptrace platform, ${layout ? describeLayout(layout) : "no cgroups"})`;
  return { available: problems.length === 0, version: description, problems };
}
