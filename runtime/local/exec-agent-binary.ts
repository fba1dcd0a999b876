// Builds the exec agent (exec-agent.c) once per source version (runtime/c-build.ts): statically linked, so
// it runs in any image (glibc, musl, or none), into a host directory shared by every driver on the host,
// named by the hash of its source and flags. A VM's config.json names the exact file, so a new version
// never changes a VM that exists; old versions are kept for the VMs that still name them.
import { existsSync } from "node:fs";
import { basename } from "node:path";
import { buildCProgram, cProgramPath, findGcc, type CBuild, type CProgram } from "../c-build";

/** World-readable (0755): crun bind-mounts the file from inside the VM's user namespace. */
export const DEFAULT_EXEC_AGENT_DIR = "/var/lib/session-sandbox/bin";

/** How our static guest programs are built (the agent, the VM relay): against static glibc, warnings as errors. */
export const STATIC_GUEST_BUILD = {
  flags: ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-static"],
  gccFix: "scripts/install-runtime-deps.sh installs it",
  buildFix: "a static build needs libc6-dev; scripts/install-runtime-deps.sh installs it",
} satisfies Partial<CProgram>;

const EXEC_AGENT: CProgram = { label: "the exec agent", name: "vm-exec-agent", sources: [new URL("./exec-agent.c", import.meta.url).pathname], ...STATIC_GUEST_BUILD };

type ExecAgentBuild = CBuild;

/** Static glibc, which `gcc -static` links against (Debian's libc6-dev). */
const STATIC_LIBC = ["/usr/lib/x86_64-linux-gnu/libc.a", "/usr/lib/aarch64-linux-gnu/libc.a", "/usr/lib/libc.a"];

/**
 * Read-only, for the doctor: whether the agent is built, or can be on first use (gcc and a static libc are
 * there), or the problem that sends every command to `crun exec`.
 */
export function execAgentStatus(dir = DEFAULT_EXEC_AGENT_DIR): { ok: boolean; detail: string } {
  const binary = cProgramPath(EXEC_AGENT, dir);
  if (binary.path === undefined) return { ok: false, detail: binary.problem };
  if (existsSync(binary.path)) return { ok: true, detail: `${basename(binary.path)} built in ${dir}, so commands run by a fork in the VM` };
  if (!findGcc()) return { ok: false, detail: "gcc is not installed, so the agent cannot be built: commands will run with crun exec (about 5× slower each)" };
  if (!STATIC_LIBC.some((path) => existsSync(path))) return { ok: false, detail: "no static libc (libc6-dev), so the agent cannot be built: commands will run with crun exec (about 5× slower each)" };
  return { ok: true, detail: `not built yet; gcc builds it into ${dir} on the first VM operation` };
}

/** The agent's path, building it if needed; a problem (no gcc, no static libc) means commands use `crun exec`. */
export function ensureExecAgent(dir = DEFAULT_EXEC_AGENT_DIR): ExecAgentBuild {
  return buildCProgram(EXEC_AGENT, dir);
}
