// Wiring for the admin-script suites: the real manager process (port 0), the scripts run as child
// processes exactly as an operator runs them (`bun run --silent <name>`), output normalisation, cleanup.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createLocalDriver } from "../../runtime/local/index";
import { createClient, type SandboxClient } from "../../sdk/index";
import { makeTempDir } from "../helpers";
import { startManager, type ManagerProcess } from "../manager-process";
import { expectNoLeaksAndCleanUp, prepareLocalRuntime } from "../runtime/local-target";

export const ROOT = join(import.meta.dir, "../..");

export type ScriptResult = { exitCode: number; stdout: string; stderr: string };

export type AdminManager = {
  manager: ManagerProcess;
  client: SandboxClient;
  /** The env an operator's shell would have: where the manager is and its token. */
  env: Record<string, string>;
  run(name: string, args?: string[], env?: Record<string, string>): Promise<ScriptResult>;
  /** A temp `git init` repository for a session directory, under a fixed-length path (see normalize). */
  makeRepo(name: string): string;
  reposDir: string;
  dataDir: string;
  /** Removes every VM (sweep 0), stops the manager, checks the runtime left nothing, deletes temp dirs. */
  cleanup(): Promise<void>;
};

/** Runs an admin script as a child process with exactly `env` (plus PATH and HOME); stdout is a pipe. */
export async function runScript(name: string, args: string[], env: Record<string, string>): Promise<ScriptResult> {
  const proc = Bun.spawn(["bun", "run", "--silent", name, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/root", ...env },
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { exitCode, stdout, stderr };
}

/**
 * Makes table output comparable across runs without breaking its alignment: each placeholder has the
 * width of what it replaces (ISO times, VM names, the temp repos dir's random suffix).
 */
export function normalize(text: string, reposDir?: string): string {
  let result = text.replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/g, "YYYY-MM-DDThh:mm:ssZ").replace(/ocm-session-[0-9a-f]{12}/g, "ocm-session-XXXXXXXXXXXX");
  if (reposDir) result = result.replaceAll(reposDir, reposDir.slice(0, -6) + "XXXXXX");
  return result;
}

export async function startAdminManager(options: { vms?: boolean; env?: Record<string, string> } = {}): Promise<AdminManager> {
  const image = options.vms ? await prepareLocalRuntime() : undefined;
  const dataDir = makeTempDir("ss-admin-");
  // Under /tmp, not tmpdir(): the path appears in table snapshots. Its 6-character suffix is normalised.
  const reposDir = mkdtempSync("/tmp/ss-admin-repos-");
  const cgroupParent = `ss-admin-${randomBytes(3).toString("hex")}`;
  // Without VMs: msb, which never touches this host's cgroups (and on this kvm_pvm machine is not even usable).
  const runtimeEnv: Record<string, string> = image ? { SANDBOX_RUNTIME: "local", SANDBOX_ROOTFS_DIR: image } : { SANDBOX_RUNTIME: "msb" };
  const manager = await startManager(dataDir, { SANDBOX_CGROUP_PARENT: cgroupParent, ...runtimeEnv, ...options.env });
  const client = createClient({ url: manager.url, token: manager.token });
  const env = { SANDBOX_URL: manager.url, SANDBOX_API_TOKEN: manager.token };
  return {
    manager,
    client,
    env,
    reposDir,
    dataDir,
    run: (name, args = [], extra = {}) => runScript(name, args, { ...env, ...extra }),
    makeRepo(name) {
      const dir = join(reposDir, name);
      mkdirSync(dir, { recursive: true });
      Bun.spawnSync(["git", "init", "-q", dir]);
      writeFileSync(join(dir, "README.md"), `# ${name}\n`);
      return dir;
    },
    async cleanup() {
      if (manager.proc.exitCode === null) {
        await client.vms.sweep({ idleForMs: 0 }).catch(() => undefined);
        await manager.stop();
      }
      const stateDir = join(manager.runtimeDir, "local");
      if (image && existsSync(stateDir)) {
        // Whatever the sweep missed is removed here, then the leak check fails the suite if anything was left.
        const driver = createLocalDriver({ stateDir, rootfsDir: image, cgroupParent });
        const leftovers = await driver.list({});
        for (const vm of leftovers) await driver.remove(vm.name);
        expectNoLeaksAndCleanUp({ driver, image, stateDir, cgroupParent });
        if (leftovers.length > 0) throw new Error(`the manager left VMs behind: ${leftovers.map((vm) => vm.name).join(", ")}`);
      }
      rmSync(reposDir, { recursive: true, force: true });
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(manager.runtimeDir, { recursive: true, force: true });
    },
  };
}

/** Parses --json output, failing with the raw text when it is not JSON. */
export function parseJson<T>(result: ScriptResult): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(`not JSON (exit ${result.exitCode}):\n${result.stdout}\n${result.stderr}`);
  }
}
