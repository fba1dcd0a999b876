// Builds the exec agent (exec-agent.c) once per source version: statically linked, so it runs in any
// image (glibc, musl, or none), into a host directory shared by every driver on the host, named by the hash
// of its source and flags. A VM's config.json names the exact file, so a new version never changes a VM
// that exists; old versions are kept for the VMs that still name them.
import { sha256Hex } from "../bun-crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { basename, join } from "node:path";

/** World-readable (0755): crun bind-mounts the file from inside the VM's user namespace. */
export const DEFAULT_EXEC_AGENT_DIR = "/var/lib/session-sandbox/bin";

const SOURCE = new URL("./exec-agent.c", import.meta.url).pathname;
const FLAGS = ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-static"];

export type ExecAgentBuild = { path: string; problem?: undefined } | { path?: undefined; problem: string };

/** The source's hash: read once per process (the probe, each driver's first VM operation and the doctor ask). */
let sourceHash: string | undefined;

/** Where this source version's binary is (built or not), or why it cannot be named. */
function binaryPath(dir: string): ExecAgentBuild {
  try {
    sourceHash ??= sha256Hex(`${readFileSync(SOURCE, "utf8")}\n${FLAGS.join(" ")}`).slice(0, 12);
    return { path: join(dir, `vm-exec-agent-${sourceHash}`) };
  } catch (error) {
    return { problem: `cannot read ${SOURCE}: ${(error as Error).message}` };
  }
}

/** Static glibc, which `gcc -static` links against (Debian's libc6-dev). */
const STATIC_LIBC = ["/usr/lib/x86_64-linux-gnu/libc.a", "/usr/lib/aarch64-linux-gnu/libc.a", "/usr/lib/libc.a"];

/**
 * Read-only, for the doctor: whether the agent is built, or can be on first use (gcc and a static libc are
 * there), or the problem that sends every command to `crun exec`.
 */
export function execAgentStatus(dir = DEFAULT_EXEC_AGENT_DIR): { ok: boolean; detail: string } {
  const binary = binaryPath(dir);
  if (binary.path === undefined) return { ok: false, detail: binary.problem };
  if (existsSync(binary.path)) return { ok: true, detail: `${basename(binary.path)} built in ${dir}, so commands run by a fork in the VM` };
  if (!Bun.which("gcc", { PATH: process.env.PATH ?? "" })) return { ok: false, detail: "gcc is not installed, so the agent cannot be built: commands will run with crun exec (about 5× slower each)" };
  if (!STATIC_LIBC.some((path) => existsSync(path))) return { ok: false, detail: "no static libc (libc6-dev), so the agent cannot be built: commands will run with crun exec (about 5× slower each)" };
  return { ok: true, detail: `not built yet; gcc builds it into ${dir} on the first VM operation` };
}

/** The agent's path, building it if needed; a problem (no gcc, no static libc) means commands use `crun exec`. */
export function ensureExecAgent(dir = DEFAULT_EXEC_AGENT_DIR): ExecAgentBuild {
  const binary = binaryPath(dir);
  if (!binary.path) return binary;
  const path = binary.path;
  if (existsSync(path)) return { path };
  const gcc = Bun.which("gcc", { PATH: process.env.PATH ?? "" });
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
