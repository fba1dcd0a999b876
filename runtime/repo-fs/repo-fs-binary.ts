// Builds the repository view daemon (repo-fs.c and the files it is made of) once per source version, linked
// against the host's libfuse3, into the host directory the exec agent uses too, named by the hash of its
// sources and flags: a VM's view names the exact file, so a new version never changes a running view.
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../bun-crypto";
import { DEFAULT_EXEC_AGENT_DIR } from "../local/exec-agent-binary";

const SOURCES = ["repo-fs.c", "ops.c", "paths.c", "checks.c", "policy.c", "host-config.c"].map((name) => new URL(`./${name}`, import.meta.url).pathname);
const HEADERS = ["view.h", "policy.h", "host-config.h"].map((name) => new URL(`./${name}`, import.meta.url).pathname);
const FLAGS = ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-D_FILE_OFFSET_BITS=64", "-I/usr/include/fuse3"];
const LIBS = ["-lfuse3", "-lpthread"];

export type RepoFsBuild = { path: string; problem?: undefined } | { path?: undefined; problem: string };

let sourceHash: string | undefined;

function binaryPath(dir: string): RepoFsBuild {
  try {
    sourceHash ??= sha256Hex([...SOURCES, ...HEADERS].map((file) => readFileSync(file, "utf8")).join("\n") + FLAGS.join(" ") + LIBS.join(" ")).slice(0, 12);
    return { path: join(dir, `repo-fs-${sourceHash}`) };
  } catch (error) {
    return { problem: `cannot read the repository view's source: ${(error as Error).message}` };
  }
}

const INSTALL_HINT = "scripts/install-runtime-deps.sh installs gcc, fuse3 and libfuse3-dev";

/** Read-only, for the doctor: built, buildable on first use, or why not (then no VM can mount a repository). */
export function repoFsStatus(dir = DEFAULT_EXEC_AGENT_DIR): { ok: boolean; detail: string } {
  const binary = binaryPath(dir);
  if (binary.path === undefined) return { ok: false, detail: binary.problem };
  if (existsSync(binary.path)) return { ok: true, detail: `repository view daemon built (${binary.path})` };
  if (!Bun.which("gcc")) return { ok: false, detail: `gcc is not installed, so the repository view cannot be built (${INSTALL_HINT})` };
  if (!existsSync("/usr/include/fuse3/fuse.h")) return { ok: false, detail: `libfuse3-dev is not installed (${INSTALL_HINT})` };
  if (!existsSync("/dev/fuse")) return { ok: false, detail: "/dev/fuse is missing: load the fuse module (modprobe fuse)" };
  return { ok: true, detail: `not built yet; gcc builds it into ${dir} on the first VM with a repository` };
}

/** The daemon's path, building it if needed, or why it cannot be had. */
export function ensureRepoFs(dir = DEFAULT_EXEC_AGENT_DIR): RepoFsBuild {
  const binary = binaryPath(dir);
  if (!binary.path) return binary;
  const path = binary.path;
  if (existsSync(path)) return { path };
  const gcc = Bun.which("gcc");
  if (!gcc) return { problem: `gcc is not installed (${INSTALL_HINT})` };
  try {
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    // Built next to the target and renamed: drivers starting at the same time never run a half-written file.
    const partial = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    const result = Bun.spawnSync([gcc, ...FLAGS, "-o", partial, ...SOURCES, ...LIBS], { stdout: "pipe", stderr: "pipe", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
    if (result.exitCode !== 0) {
      rmSync(partial, { force: true });
      return { problem: `gcc could not build the repository view: ${result.stderr.toString().trim().slice(0, 2000)} (${INSTALL_HINT})` };
    }
    chmodSync(partial, 0o755);
    renameSync(partial, path);
    return { path };
  } catch (error) {
    return { problem: `cannot install the repository view in ${dir}: ${(error as Error).message}` };
  }
}
