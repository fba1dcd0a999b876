// Builds the repository view daemon (repo-fs.c and the files it is made of) once per source version
// (runtime/c-build.ts), linked against the host's libfuse3, into the host directory the exec agent uses too,
// named by the hash of its sources and flags: a VM's view names the exact file, so a new version never
// changes a running view.
import { existsSync } from "node:fs";
import { buildCProgram, cProgramPath, findGcc, type CBuild, type CProgram } from "../c-build";
import { DEFAULT_EXEC_AGENT_DIR } from "../local/exec-agent-binary";

const INSTALL_HINT = "scripts/install-runtime-deps.sh installs gcc, fuse3 and libfuse3-dev";

const REPO_FS: CProgram = {
  label: "the repository view",
  name: "repo-fs",
  sources: ["repo-fs.c", "ops.c", "paths.c", "checks.c", "policy.c", "host-config.c"].map((name) => new URL(`./${name}`, import.meta.url).pathname),
  headers: ["view.h", "policy.h", "host-config.h"].map((name) => new URL(`./${name}`, import.meta.url).pathname),
  flags: ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-D_FILE_OFFSET_BITS=64", "-I/usr/include/fuse3"],
  libs: ["-lfuse3", "-lpthread"],
  gccFix: INSTALL_HINT,
  buildFix: INSTALL_HINT,
};

type RepoFsBuild = CBuild;

/** Read-only, for the doctor: built, buildable on first use, or why not (then no VM can mount a repository). */
export function repoFsStatus(dir = DEFAULT_EXEC_AGENT_DIR): { ok: boolean; detail: string } {
  const binary = cProgramPath(REPO_FS, dir);
  if (binary.path === undefined) return { ok: false, detail: binary.problem };
  if (existsSync(binary.path)) return { ok: true, detail: `repository view daemon built (${binary.path})` };
  if (!findGcc()) return { ok: false, detail: `gcc is not installed, so the repository view cannot be built (${INSTALL_HINT})` };
  if (!existsSync("/usr/include/fuse3/fuse.h")) return { ok: false, detail: `libfuse3-dev is not installed (${INSTALL_HINT})` };
  if (!existsSync("/dev/fuse")) return { ok: false, detail: "/dev/fuse is missing: load the fuse module (modprobe fuse)" };
  return { ok: true, detail: `not built yet; gcc builds it into ${dir} on the first VM with a repository` };
}

/** The daemon's path, building it if needed, or why it cannot be had. */
export function ensureRepoFs(dir = DEFAULT_EXEC_AGENT_DIR): RepoFsBuild {
  return buildCProgram(REPO_FS, dir);
}
