// Runs the crun CLI: one private state root per driver, and the hybrid-cgroup workaround for `run`.
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { egressSocketOf } from "../driver";
import type { CgroupLayout } from "./cgroup-layout";
import { GUEST_PROXY_PORT, type OciConfig } from "./oci-config";
import type { AgentListener, OciRuntime, RuntimeVm } from "./oci-runtime";
import { mountProblems } from "./verify-mounts";

type CrunOptions = { crunPath: string; unsharePath: string; crunRoot: string; layout: CgroupLayout };
type CrunResult = { exitCode: number; stdout: string; stderr: string };

export class Crun implements OciRuntime {
  readonly name = "crun";
  readonly keepsWritesInMemory = false;
  /** A daemon needs mounts and nested namespaces of the host's own kernel, which this tier refuses. */
  readonly holdsDocker = false;
  constructor(private readonly options: CrunOptions) {}

  /** crun runs the bundle as the driver builds it. */
  adaptConfig(config: OciConfig): OciConfig {
    return config;
  }

  async prepareStart(): Promise<void> {}

  async release(): Promise<void> {}

  /** crun keeps nothing outside a VM's directory and cgroup, which incomplete.ts already sweeps. */
  async cleanUpLeftovers(): Promise<string[]> {
    return [];
  }

  /** The container's PID 1 sees the guest's mounts; the guest's loopback is its network namespace's. */
  async checkStarted(vm: RuntimeVm, pid: number): Promise<string[]> {
    const problems = mountProblems(pid, vm.spec.mounts, vm.sources);
    // The egress forwarder starts beside PID 1; a command run right after boot must find it listening.
    if (problems.length === 0 && egressSocketOf(vm.spec)) await waitForGuestListener(pid, GUEST_PROXY_PORT);
    return problems;
  }

  /** argv for `crun <args>` against this driver's own state root (so names never collide across drivers). */
  argv(args: string[]): string[] {
    return [this.options.crunPath, "--root", this.options.crunRoot, ...args];
  }

  async run(args: string[]): Promise<CrunResult> {
    const proc = Bun.spawn(this.argv(args), { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr, exitCode] = await Promise.all([
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
      proc.exited,
    ]);
    return { exitCode, stdout, stderr };
  }

  /**
   * `crun run -d`. The container's PID 1 inherits crun's stdio, so crun gets /dev/null and reports
   * errors through --log instead: a pipe would stay open for the VM's whole life.
   * crun 1.8.1 refuses hybrid hosts even with --cgroup-manager=cgroupfs; it only checks whether the
   * cgroup2 mount has controllers, so on hybrid it runs in a private mount namespace where that mount is
   * covered by an empty tmpfs. The host's mounts are untouched; v1 controllers are all it then sees.
   * With the exec agent, the agent binary (which starts crun anyway) does that itself; without it, an
   * `unshare` + `sh` + `mount` wrapper does (more processes on every boot).
   */
  async startDetached(id: string, bundleDir: string, pidFile: string, logFile: string, agent?: AgentListener): Promise<void> {
    rmSync(logFile, { force: true });
    const run = this.argv(["--log", `file:${logFile}`, "--log-format", "json", "run", "-d", ...(agent ? ["--preserve-fds", "1"] : []), "--bundle", bundleDir, "--pid-file", pidFile, id]);
    const { layout } = this.options;
    const hide = layout.kind === "hybrid" ? layout.unifiedRoot : undefined;
    let argv: string[];
    if (agent) {
      // The agent binary binds its socket (as root, in the VM's directory no VM sees) and runs crun with the
      // listener as fd 3 and stderr on /dev/null; crun hands fd 3 to the VM's init, which passes it to the
      // agent (exec-agent.c). Its own errors, before crun runs, come on the stderr pipe.
      argv = [agent.binary, ...(hide ? ["--hide-cgroup2", hide] : []), "--bind", agent.socket, "--", ...run];
    } else if (hide) {
      // The wrapper's stderr is a pipe for mount errors; crun itself gets /dev/null (see above).
      const script = 'mount -t tmpfs session-sandbox-hide "$0" && exec "$@" 2>/dev/null';
      argv = [this.options.unsharePath, "--mount", "--propagation", "private", "sh", "-c", script, hide, ...run];
    } else {
      argv = run;
    }
    const proc = Bun.spawn(argv, { stdin: "ignore", stdout: "ignore", stderr: agent || hide ? "pipe" : "ignore" });
    const [stderr, exitCode] = await Promise.all([proc.stderr ? new Response(proc.stderr).text() : "", proc.exited]);
    if (exitCode !== 0) throw new Error(`crun run failed (exit ${exitCode}): ${readLog(logFile) || stderr.trim() || "no message"}`);
  }

  /**
   * `delete -f` kills what is left and removes crun's state and cgroups; a missing container is fine.
   * crun keeps a container's state in `<root>/<id>/`: without it there is nothing to delete, and the
   * spawn (a few ms on every boot of a fresh VM) is skipped. The caller kills the cgroup either way.
   */
  async delete(id: string): Promise<void> {
    if (!existsSync(join(this.options.crunRoot, id))) return;
    const { exitCode, stderr } = await this.run(["delete", "-f", id]);
    if (exitCode !== 0 && !/does not exist|No such file/i.test(stderr)) {
      throw new Error(`crun delete ${id} failed (exit ${exitCode}): ${stderr.trim()}`);
    }
  }

  async version(): Promise<string | undefined> {
    try {
      const { exitCode, stdout } = await this.run(["--version"]);
      return exitCode === 0 ? /crun version (\S+)/.exec(stdout)?.[1] : undefined;
    } catch {
      return undefined;
    }
  }
}

/** The error lines of a crun --log-format=json log file, joined. */
export function readLog(logFile: string): string {
  let text = "";
  try {
    text = readFileSync(logFile, "utf8");
  } catch {
    return "";
  }
  const messages: string[] = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    try {
      const entry = JSON.parse(line) as { msg?: string; level?: string };
      if (entry.level === "error" && entry.msg) messages.push(entry.msg);
    } catch {
      messages.push(line.trim());
    }
  }
  return messages.join("; ");
}

/** Polls the VM's own network namespace (via its PID 1's /proc/net/tcp) until 127.0.0.1:port listens. */
async function waitForGuestListener(pid: number, port: number, timeoutMs = 5_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (tcpListening(readFileSync(`/proc/${pid}/net/tcp`, "utf8"), port)) return;
    await Bun.sleep(10);
  }
  throw new Error(`the egress forwarder did not start listening on 127.0.0.1:${port} within ${timeoutMs} ms`);
}

/** Whether a /proc/net/tcp table has 127.0.0.1:port in LISTEN (column 2 is local_address, column 4 the state; 0A is LISTEN). */
export function tcpListening(table: string, port: number): boolean {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  return table.split("\n").some((line) => {
    const fields = line.trim().split(/\s+/);
    return fields[1] === local && fields[3] === "0A";
  });
}
