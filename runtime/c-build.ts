// Builds our C helpers with gcc, once per source version: each binary is named by the hash of its sources,
// headers, flags and libraries, so a VM that names one file is never changed by a new version; it is built
// next to its target and renamed into place, so drivers starting together never run a half-written file.
// When gcc or a library is missing the result is a problem that says so, with how to get it.
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "./bun-crypto";

export type CProgram = {
  /** What it is, in problems: "the exec agent". */
  label: string;
  /** The binary's name before its hash: `vm-exec-agent` → vm-exec-agent-<hash>, then `suffix`. */
  name: string;
  suffix?: string;
  /** Compiled, in this order. */
  sources: string[];
  /** Included by the sources: hashed, not compiled. */
  headers?: string[];
  flags: string[];
  libs?: string[];
  /** 0o755 unless said (a library to preload: 0o644). */
  mode?: number;
  /** How to get gcc, said when it is missing: "scripts/install-runtime-deps.sh installs it". */
  gccFix: string;
  /** Said after gcc's own message when it fails (usually a missing library or header). */
  buildFix?: string;
};

export type CBuild = { path: string; problem?: undefined } | { path?: undefined; problem: string };

/** Each program's hash, from its files as first read in this process. */
const hashes = new Map<CProgram, string>();

/** Where the binary of this source version is in `dir` (built or not), or why it cannot be named. */
export function cProgramPath(program: CProgram, dir: string): CBuild {
  try {
    let hash = hashes.get(program);
    if (hash === undefined) {
      const files = [...program.sources, ...(program.headers ?? [])].map((file) => readFileSync(file, "utf8"));
      hash = sha256Hex([...files, [...program.flags, ...(program.libs ?? [])].join(" ")].join("\n")).slice(0, 12);
      hashes.set(program, hash);
    }
    return { path: join(dir, `${program.name}-${hash}${program.suffix ?? ""}`) };
  } catch (error) {
    return { problem: `cannot read the source of ${program.label}: ${(error as Error).message}` };
  }
}

/** gcc on this process's PATH, or undefined. */
export function findGcc(): string | undefined {
  return Bun.which("gcc", { PATH: process.env.PATH ?? "" }) ?? undefined;
}

/** The binary's path in `dir` (created with `dirMode`), building it first if this version is not there yet. */
export function buildCProgram(program: CProgram, dir: string, dirMode = 0o755): CBuild {
  const binary = cProgramPath(program, dir);
  if (!binary.path) return binary;
  const path = binary.path;
  if (existsSync(path)) return { path };
  const gcc = findGcc();
  if (!gcc) return { problem: `gcc is not installed (${program.gccFix})` };
  try {
    mkdirSync(dir, { recursive: true, mode: dirMode });
    chmodSync(dir, dirMode);
    const partial = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    const args = [...program.flags, "-o", partial, ...program.sources, ...(program.libs ?? [])];
    const result = Bun.spawnSync([gcc, ...args], { stdout: "pipe", stderr: "pipe", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
    if (result.exitCode !== 0) {
      rmSync(partial, { force: true });
      const fix = program.buildFix ? ` (${program.buildFix})` : "";
      return { problem: `gcc could not build ${program.label}: ${result.stderr.toString().trim().slice(0, 2000)}${fix}` };
    }
    chmodSync(partial, program.mode ?? 0o755);
    renameSync(partial, path);
    return { path };
  } catch (error) {
    return { problem: `cannot install ${program.label} in ${dir}: ${(error as Error).message}` };
  }
}
