// Runs the crun CLI: one private state root per driver, and the hybrid-cgroup workaround for `run`.
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { CgroupLayout } from "./cgroup-layout";

export type CrunOptions = { crunPath: string; unsharePath: string; crunRoot: string; layout: CgroupLayout };
export type CrunResult = { exitCode: number; stdout: string; stderr: string };

export class Crun {
  constructor(private readonly options: CrunOptions) {}

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
   */
  async startDetached(id: string, bundleDir: string, pidFile: string, logFile: string): Promise<void> {
    rmSync(logFile, { force: true });
    const crunArgv = this.argv(["--log", `file:${logFile}`, "--log-format", "json", "run", "-d", "--bundle", bundleDir, "--pid-file", pidFile, id]);
    const { layout } = this.options;
    let stderr = "";
    let exitCode: number;
    if (layout.kind === "hybrid" && layout.unifiedRoot) {
      // The wrapper's stderr is a pipe for mount errors; crun itself gets /dev/null (see above).
      const script = 'mount -t tmpfs session-sandbox-hide "$0" && exec "$@" 2>/dev/null';
      const argv = [this.options.unsharePath, "--mount", "--propagation", "private", "sh", "-c", script, layout.unifiedRoot, ...crunArgv];
      const proc = Bun.spawn(argv, { stdin: "ignore", stdout: "ignore", stderr: "pipe" });
      [stderr, exitCode] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
    } else {
      exitCode = await Bun.spawn(crunArgv, { stdin: "ignore", stdout: "ignore", stderr: "ignore" }).exited;
    }
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
