// The checks `doctor` can make on this host without the API (the manager may be down): configuration,
// Bun, crun and the exec agent, /dev/kvm, inotify limits, the root filesystem, disk space and the token.
// Read-only; never opens the database.
import { accessSync, constants, existsSync, readFileSync, statfsSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { tokenPath } from "../app/auth-token";
import { defaultRuntimeDir, loadConfig, resolveDataDir } from "../app/config";
import { probeKvm } from "../runtime/kvm-probe";
import { inotifyHostCheck } from "../runtime/local/inotify-limits";
import { execAgentStatus } from "../runtime/local/exec-agent-binary";
import { repoFsStatus } from "../runtime/repo-fs/repo-fs-binary";

export type Check = { name: string; ok: boolean; required: boolean; detail: string; fix: string | null };
type Env = Record<string, string | undefined>;

const ROOT = join(import.meta.dir, "..");
const MIN_FREE_BYTES = 1024 ** 3;
const DEPS_FIX = "bash scripts/install-runtime-deps.sh (as root)";

const pass = (name: string, detail: string, required = true): Check => ({ name, ok: true, required, detail, fix: null });
const fail = (name: string, detail: string, fix: string, required = true): Check => ({ name, ok: false, required, detail, fix });

function configCheck(env: Env): Check {
  try {
    loadConfig(env);
    const runtime = env.SANDBOX_RUNTIME || "auto";
    if (!["auto", "local", "gvisor", "msb"].includes(runtime)) return fail("config", `SANDBOX_RUNTIME=${JSON.stringify(runtime)} is not auto, local, gvisor or msb`, "set SANDBOX_RUNTIME to auto, local, gvisor or msb, or unset it");
    return pass("config", `the SANDBOX_* environment parses (runtime: ${runtime})`);
  } catch (error) {
    return fail("config", (error as Error).message, "correct or unset the variable it names (see docs/configuration.md, the environment table)");
  }
}

function bunCheck(): Check {
  const pinned = /^BUN_VERSION="([^"]+)"/m.exec(readFileSync(join(ROOT, "scripts/setup.sh"), "utf8"))?.[1];
  if (!pinned || Bun.version === pinned) return pass("bun", `Bun ${Bun.version}`);
  return fail("bun", `Bun ${Bun.version}, but the project pins ${pinned}`, `npm install --global bun@${pinned} (as scripts/setup.sh does)`);
}

/** `<name> --version`, found on PATH and run: its path and version, or the failed check saying why. */
function toolVersion(env: Env, name: string, neededBy: string, required: boolean): { path: string; version: string } | Check {
  const path = Bun.which(name, { PATH: env.PATH ?? "" });
  if (!path) return fail(name, `${name} is not on PATH (${neededBy} needs it)`, DEPS_FIX, required);
  const run = Bun.spawnSync([path, "--version"], { stdout: "pipe", stderr: "pipe" });
  const version = new RegExp(`${name} version (\\S+)`).exec(run.stdout.toString())?.[1];
  if (run.exitCode !== 0 || !version) return fail(name, `${path} does not run: ${run.stderr.toString().trim() || `exit ${run.exitCode}`}`, DEPS_FIX, required);
  return { path, version };
}

function crunCheck(env: Env, required: boolean): Check {
  const crun = toolVersion(env, "crun", "the local runtime", required);
  if ("ok" in crun) return crun;
  if (!existsSync("/usr/bin/tini-static")) return fail("crun", `crun ${crun.version}, but /usr/bin/tini-static (the VMs' PID 1) is missing`, DEPS_FIX, required);
  return pass("crun", `crun ${crun.version} at ${crun.path}, tini-static present`, required);
}

/** The local tier's exec agent (runtime/local/exec-agent.c): without it every command is a `crun exec`. Not built here. */
function execAgentCheck(env: Env): Check {
  if (env.SANDBOX_EXEC_AGENT === "off") return pass("exec agent", "switched off (SANDBOX_EXEC_AGENT=off): commands run with crun exec", false);
  const status = execAgentStatus();
  return status.ok ? pass("exec agent", status.detail, false) : fail("exec agent", status.detail, DEPS_FIX, false);
}

/** The repository view (runtime/repo-fs): every VM with a repository needs it; none boots without it. Not built here. */
function repoViewCheck(required: boolean): Check {
  const status = repoFsStatus();
  return status.ok ? pass("repository view", status.detail, required) : fail("repository view", status.detail, DEPS_FIX, required);
}

/** runsc (gVisor) for the gvisor tier: on top of everything crun's tier needs, since it boots the same bundles. */
function runscCheck(env: Env, required: boolean): Check {
  const runsc = toolVersion(env, "runsc", "the gvisor tier", required);
  if ("ok" in runsc) return runsc;
  return pass("runsc", `runsc ${runsc.version} at ${runsc.path}`, required);
}

/** The KVM probe's verdict (runtime/kvm-probe.ts, the one the msb driver uses). */
function kvmCheck(required: boolean): Check {
  const kvm = probeKvm();
  if (kvm.usable) return pass("kvm", kvm.detail, required);
  return fail("kvm", `${kvm.detail} (the msb runtime needs a usable /dev/kvm)`, kvm.problems.map((problem) => problem.fix).join("; "), required);
}

function rootfsCheck(env: Env): Check {
  const run = Bun.spawnSync(["bash", join(ROOT, "scripts/build-rootfs.sh"), "--print-path"], { env: env as Record<string, string>, stdout: "pipe", stderr: "pipe" });
  const path = run.stdout.toString().trim();
  if (run.exitCode !== 0 || !path) return fail("root filesystem", `scripts/build-rootfs.sh --print-path failed: ${run.stderr.toString().trim()}`, "run it by hand to see why");
  if (!existsSync(join(path, "etc/session-sandbox-rootfs"))) return fail("root filesystem", `${path} is not built (no etc/session-sandbox-rootfs)`, "bash scripts/build-rootfs.sh (as root; about 40 s, cached afterwards)");
  return pass("root filesystem", path);
}

/** statfs of the directory, or of its nearest existing parent (the manager creates it at start). */
function diskCheck(label: string, dir: string): Check {
  let probe = dir;
  while (!existsSync(probe) && dirname(probe) !== probe) probe = dirname(probe);
  try {
    const stats = statfsSync(probe);
    const freeGib = (stats.bavail * stats.bsize) / 1024 ** 3;
    const detail = `${freeGib.toFixed(1)} GiB free at ${probe === dir ? dir : `${probe} (for ${dir}, not created yet)`}`;
    if (stats.bavail * stats.bsize >= MIN_FREE_BYTES) return pass(`disk space (${label})`, detail);
    return fail(`disk space (${label})`, `${detail}; at least 1 GiB is needed`, `free space on the filesystem of ${probe} (e.g. \`bun run prune\` once the manager runs)`);
  } catch (error) {
    return fail(`disk space (${label})`, `cannot stat ${probe}: ${(error as Error).message}`, `check that ${probe} is reachable`);
  }
}

/** Not required here: the manager creates the token file at its first start. */
function tokenCheck(env: Env, dataDir: string): Check {
  if (env.SANDBOX_API_TOKEN) return pass("token", "from SANDBOX_API_TOKEN", false);
  const path = tokenPath(dataDir);
  if (!existsSync(path)) return fail("token", `${path} does not exist yet`, "start the manager once (it creates the token), or `bun run token`", false);
  const mode = statSync(path).mode & 0o777;
  try {
    accessSync(path, constants.R_OK);
  } catch {
    return fail("token", `${path} is not readable by this user`, "run as the manager's user, or set SANDBOX_API_TOKEN", false);
  }
  if ((mode & 0o077) !== 0) return fail("token", `${path} has mode ${mode.toString(8)}: others can read the credential`, `chmod 600 ${path}`, false);
  return pass("token", `${path}, mode ${mode.toString(8)}`, false);
}

export function localChecks(env: Env): Check[] {
  const runtime = env.SANDBOX_RUNTIME || "auto";
  const crun = crunCheck(env, runtime === "local" || runtime === "gvisor");
  const runsc = runscCheck(env, runtime === "gvisor");
  const kvm = kvmCheck(runtime === "msb");
  const dataDir = resolveDataDir(env);
  const runtimeDir = env.SANDBOX_RUNTIME_DIR || defaultRuntimeDir(dataDir);
  const checks = [configCheck(env), bunCheck(), crun, execAgentCheck(env), repoViewCheck(true), runsc, kvm];
  if (runtime === "auto") {
    // auto's order is the manager's call (runtime/select.ts): msb, then local, then gvisor.
    const usable = kvm.ok ? "msb (if its binary works)" : crun.ok ? "local" : undefined;
    checks.push(usable ? pass("runtime", `SANDBOX_RUNTIME=auto would use ${usable}`) : fail("runtime", "SANDBOX_RUNTIME=auto finds neither crun (local, gvisor) nor a usable /dev/kvm (msb)", `${DEPS_FIX}, or run on a KVM host`));
  }
  // All VMs share host root's inotify quota (runtime/local/inotify-limits.ts); the manager raises it at start.
  checks.push({ name: "inotify limits", required: runtime === "local" || runtime === "gvisor", ...inotifyHostCheck() });
  checks.push(rootfsCheck(env), diskCheck("data dir", dataDir), diskCheck("runtime dir", runtimeDir), tokenCheck(env, dataDir));
  return checks;
}
