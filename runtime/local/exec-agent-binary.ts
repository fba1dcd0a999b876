// Builds the exec agent (exec-agent.c) once per source version: statically linked, so it runs in any
// image (glibc, musl, or none), into a host directory shared by every driver on the host, named by the hash
// of its source and flags. A VM's config.json names the exact file, so a new version never changes a VM
// that exists; old versions are kept for the VMs that still name them.
import { sha256Hex } from "../bun-crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";

/** World-readable (0755): crun bind-mounts the file from inside the VM's user namespace. */
export const DEFAULT_EXEC_AGENT_DIR = "/var/lib/session-sandbox/bin";

const SOURCE = new URL("./exec-agent.c", import.meta.url).pathname;
const FLAGS = ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-static"];

export type ExecAgentBuild = { path: string; problem?: undefined } | { path?: undefined; problem: string };

/** The agent's path, building it if needed; a problem (no gcc, no static libc) means commands use `crun exec`. */
export function ensureExecAgent(dir = DEFAULT_EXEC_AGENT_DIR): ExecAgentBuild {
  let source: string;
  try {
    source = readFileSync(SOURCE, "utf8");
  } catch (error) {
    return { problem: `cannot read ${SOURCE}: ${(error as Error).message}` };
  }
  const path = join(dir, `vm-exec-agent-${sha256Hex(`${source}\n${FLAGS.join(" ")}`).slice(0, 12)}`);
  if (existsSync(path)) return { path };
  const gcc = Bun.which("gcc");
  if (!gcc) return { problem: "gcc is not installed (scripts/install-runtime-deps.sh installs it)" };
  try {
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    chmodSync(dir, 0o755);
    // Built next to the target and renamed: drivers starting at the same time never run a half-written file.
    const partial = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    const result = Bun.spawnSync([gcc, ...FLAGS, "-o", partial, SOURCE], { stdout: "pipe", stderr: "pipe", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
    if (result.exitCode !== 0) {
      rmSync(partial, { force: true });
      return { problem: `gcc could not build the exec agent: ${result.stderr.toString().trim().slice(0, 2000)} (a static build needs libc6-dev; scripts/install-runtime-deps.sh installs it)` };
    }
    chmodSync(partial, 0o755);
    renameSync(partial, path);
    return { path };
  } catch (error) {
    return { problem: `cannot install the exec agent in ${dir}: ${(error as Error).message}` };
  }
}
