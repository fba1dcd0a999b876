// The gvisor tier's capability probe: what the embedded driver needs of any host (local/probe.ts), plus
// runsc, a platform it can run on here, and what the tier's own pieces need — each with its fix.
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Capability } from "../driver";
import { describeLayout, type CgroupLayout } from "../local/cgroup-layout";
import { hostProblems } from "../local/probe";
import { INSTALL_DEPS_SCRIPT } from "../local/rootfs";
import type { Runsc } from "./runsc";
import { guestBinaryPaths } from "./guest-binaries";
import { runscTooOld } from "./runsc-version";

type GvisorProbeInput = {
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

const SMOKE_TIMEOUT_MS = 15_000;

/**
 * Whether runsc can start a sandbox on this host at all (`runsc do true`: ptrace allowed, its
 * seccomp and namespaces accepted by the kernel, e.g. not inside a container that forbids them). The
 * error text when not. No cgroups, no network, a root of its own under the state dir; nothing is left.
 */
async function sandboxProblem(runscPath: string, stateDir: string): Promise<string | undefined> {
  const root = join(stateDir, "runsc-probe");
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const proc = Bun.spawn([runscPath, "--root", root, "--network=none", "--platform=ptrace", "--ignore-cgroups", "do", "true"], { cwd: "/", stdin: "ignore", stdout: "ignore", stderr: "pipe" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), SMOKE_TIMEOUT_MS);
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]).finally(() => clearTimeout(timer));
  return code === 0 ? undefined : stderr.trim().split("\n").at(-1) || `exit ${code}`;
}

export async function probeGvisor(input: GvisorProbeInput): Promise<Capability> {
  const deps = `sudo ${INSTALL_DEPS_SCRIPT}`;
  const problems: Capability["problems"] = [];
  let version: string | undefined;
  if (!input.runscPath) problems.push({ what: "runsc (gVisor) is not installed", fix: deps });
  else {
    version = await input.runsc.version();
    if (!version) problems.push({ what: `runsc at ${input.runscPath} does not run`, fix: `apt-get install --reinstall -y runsc, or ${deps}` });
    const tooOld = version && runscTooOld(version);
    if (tooOld) problems.push({ what: tooOld, fix: `${deps} (installs Debian trixie's runsc, pinned so nothing else comes from trixie)` });
  }
  if (ptraceForbidden()) {
    problems.push({ what: "the ptrace platform is unusable: kernel.yama.ptrace_scope is 3 (no ptrace at all)", fix: "sysctl -w kernel.yama.ptrace_scope=1 (needs a reboot once set to 3)" });
  } else if (version && process.getuid?.() === 0) {
    const problem = await sandboxProblem(input.runscPath!, input.stateDir);
    if (problem) problems.push({ what: `runsc cannot start a sandbox on this host (ptrace platform): ${problem}`, fix: "run the manager on the host or in a VM, not in a container that forbids ptrace and namespaces; `runsc --platform=ptrace do true` shows the cause" });
  }
  if (!input.unsharePath) problems.push({ what: "unshare (util-linux) is missing; the repository's idmapped mounts need it", fix: deps });
  const binaries = guestBinaryPaths(input.stateDir);
  if (!existsSync(binaries.seccompExec) && !Bun.which("gcc")) {
    problems.push({ what: "gcc is missing; it builds the program every gVisor guest process starts with (runtime/gvisor/seccomp-exec.c)", fix: `apt-get install -y gcc, or ${deps}` });
  }
  problems.push(...hostProblems(input));
  const { layout } = input;
  const description = `gvisor (runsc ${version ?? "missing"}, ptrace platform, ${layout ? describeLayout(layout) : "no cgroups"})`;
  return { available: problems.length === 0, version: description, problems };
}
