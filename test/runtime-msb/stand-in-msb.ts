// A FAKE msb — "the stand-in msb" — for running the RuntimeDriver contract suite through MsbDriver on a host
// where real microVMs cannot boot (kvm_pvm, see docs/runtime-msb.md). Never used outside tests.
//
// It accepts exactly the argument vectors runtime/msb builds (stand-in-args.ts), keeps msb's stored config
// per sandbox under MSB_HOME, answers inspect/list by filling the RECORDED real msb 0.6.18 outputs
// (stand-in-json.ts, fixtures/), and prints real msb's recorded texts for errors and progress
// (fixtures/stand-in-replies-0.6.18.json, captured by fixtures/capture-stand-in-0.6.18.ts). Its guest is
// REAL: each "microVM" is a local-runtime VM (crun: namespaces, cgroups, seccomp) of the same name in
// MSB_HOME/local, booted from the built-in rootfs whatever image the spec names, so limits, exec, the
// kill sweep and the volume are the real thing. Where it differs from msb:
// - network: none at all; the policy is stored for inspect only (nothing is enforced or reachable);
// - limits: cpus and memory become cgroup limits (a microVM has vCPUs and guest RAM instead), with the
//   local runtime's pids limit (msb sets none), and the volume is the local runtime's (a quota msb lacks);
// - `remove` keeps the named volume by leaving the stopped local VM in place until `volume remove`;
// - a repository view msb would be given is replaced by the repository itself, bound at its own path
//   (unguarded: the guard is the views' own, tested on the embedded tiers and with the real views).
import { existsSync, fstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { GUEST_SYSTEM_CA_BUNDLE, GUEST_TRUST_DIR, TRUST_BUNDLE_FILE, type BindMount, type VmSpec } from "../../runtime/driver";
import { createLocalDriver, type LocalDriver } from "../../runtime/local/index";
import { isRepoViewPath } from "../../runtime/repo-fs/repo-views";
import repliesFixture from "./fixtures/stand-in-replies-0.6.18.json";
import { parseCreate, parseExec, parseList, parseNamed, type StoredSandbox, UsageError } from "./stand-in-args";
import { inspectJson, listJson } from "./stand-in-json";

/** Env the harness's wrapper sets (the driver gives msb a minimal env). */
export const STAND_IN_ROOTFS_ENV = "STAND_IN_MSB_ROOTFS";
export const STAND_IN_CGROUP_ENV = "STAND_IN_MSB_CGROUP_PARENT";

type ReplyKey = keyof typeof repliesFixture.replies;
type Status = "Running" | "Stopped";

const home = process.env.MSB_HOME ?? "";
const sandboxesDir = join(home, "sandboxes");
const volumesDir = join(home, "volumes");

function write(stream: "stdout" | "stderr", text: string | Uint8Array): Promise<void> {
  return new Promise((resolve) => (stream === "stdout" ? process.stdout : process.stderr).write(text, () => resolve()));
}

/** Prints real msb's recorded reply with this sandbox's or volume's name; returns its exit code. */
async function reply(key: ReplyKey, names: { name?: string; volume?: string } = {}): Promise<number> {
  const recorded = repliesFixture.replies[key];
  const fill = (text: string) => text.replaceAll("{name}", names.name ?? "").replaceAll("{volume}", names.volume ?? "").replaceAll("{root}/home", home);
  if (recorded.stdout) await write("stdout", fill(recorded.stdout));
  if (recorded.stderr) await write("stderr", fill(recorded.stderr));
  return recorded.exitCode ?? 1;
}

/** msb's boot failure block (fixtures: createBootFails), with the local runtime's reason as the detail. */
async function failedToStart(name: string, error: unknown): Promise<number> {
  await write("stderr", `error: failed to start "${name}"\n  → other: ${error instanceof Error ? error.message : String(error)}\n`);
  return 1;
}

function readSandbox(name: string): StoredSandbox | undefined {
  const path = join(sandboxesDir, `${name}.json`);
  return existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as StoredSandbox) : undefined;
}

function writeSandbox(sandbox: StoredSandbox): void {
  mkdirSync(sandboxesDir, { recursive: true });
  const path = join(sandboxesDir, `${sandbox.name}.json`);
  writeFileSync(`${path}.tmp`, JSON.stringify(sandbox));
  renameSync(`${path}.tmp`, path);
}

/** msb's timestamps carry nanoseconds and an explicit offset. */
function msbTimestamp(): string {
  return new Date().toISOString().replace(/\.(\d{3})Z$/, ".$1000000+00:00");
}

function localDriver(): LocalDriver {
  const rootfsDir = process.env[STAND_IN_ROOTFS_ENV];
  if (!rootfsDir) throw new Error(`${STAND_IN_ROOTFS_ENV} is not set: run the stand-in through its harness`);
  return createLocalDriver({ stateDir: join(home, "local"), rootfsDir, cgroupParent: process.env[STAND_IN_CGROUP_ENV] ?? "session-sandbox-stand-in-msb" });
}

async function statusOf(local: LocalDriver, name: string): Promise<Status> {
  return (await local.inspect(name))?.status === "running" ? "Running" : "Stopped";
}

/** The local VM that plays the microVM: same limits and mounts, the trust mounts as the local runtime's trustDir. */
function guestSpec(sandbox: Omit<StoredSandbox, "createdAt">): VmSpec {
  const mounts: BindMount[] = [];
  const trust = sandbox.binds.find((b) => b.guest === GUEST_TRUST_DIR && !b.file && b.readOnly);
  for (const bind of sandbox.binds) {
    if (bind === trust || (trust && bind.file && bind.guest === GUEST_SYSTEM_CA_BUNDLE && bind.host === `${trust.host}/${TRUST_BUNDLE_FILE}`)) continue;
    // A repository view (runtime/repo-fs) is shown at the repository's own path: the stand-in binds the
    // repository there itself, without the view's guard (the local runtime binds at the identical path only).
    const hostPath = isRepoViewPath(bind.host) ? bind.guest : bind.host;
    if (hostPath !== bind.guest) throw new Error(`the stand-in msb (a FAKE) mounts only at the identical path, not ${bind.host} at ${bind.guest}`);
    mounts.push({ hostPath, ...(bind.readOnly ? { readOnly: true } : {}), ...(bind.file ? { kind: "file" as const } : {}) });
  }
  return {
    name: sandbox.name,
    image: process.env[STAND_IN_ROOTFS_ENV] ?? "",
    cpus: sandbox.cpus,
    memoryMib: sandbox.memoryMib,
    mounts,
    tmpSizeMib: sandbox.tmpSizeMib,
    volume: { name: sandbox.volume },
    labels: {},
    network: { mode: "none" },
    ...(trust ? { trustDir: trust.host } : {}),
  };
}

async function create(args: string[]): Promise<number> {
  const { sandbox, replace } = parseCreate(args);
  if (readSandbox(sandbox.name) && !replace) return reply("alreadyExists", { name: sandbox.name });
  const local = localDriver();
  let spec: VmSpec;
  try {
    spec = guestSpec(sandbox);
  } catch (error) {
    return failedToStart(sandbox.name, error);
  }
  mkdirSync(volumesDir, { recursive: true });
  writeFileSync(join(volumesDir, sandbox.volume), "");
  try {
    // A local VM of this name left by `remove` (it held the volume) is replaced too, keeping the volume.
    await local.create(spec, { replace: replace || (await local.inspect(sandbox.name)) !== undefined });
  } catch (error) {
    return failedToStart(sandbox.name, error);
  }
  writeSandbox({ ...sandbox, createdAt: msbTimestamp() });
  return 0;
}

async function exec(args: string[]): Promise<number> {
  const command = parseExec(args);
  if (!readSandbox(command.name)) return reply("sandboxNotFound", { name: command.name });
  const local = localDriver();
  // msb exec boots a Stopped sandbox for the command (fixtures: execBootsStopped) and stops it afterwards.
  const booted = (await statusOf(local, command.name)) === "Stopped";
  if (booted) {
    try {
      await local.start(command.name);
    } catch (error) {
      return failedToStart(command.name, error);
    }
  }
  const pending: Promise<void>[] = [];
  const timeoutMs = command.timeoutSeconds === undefined ? undefined : command.timeoutSeconds * 1000;
  try {
    const result = await local.exec(
      command.name,
      // As msb's --stream: the guest command reads msb's own stdin to its end (the driver gives a pipe only to a command with input).
      { argv: command.argv, cwd: command.workdir, env: command.env, ...(timeoutMs === undefined ? {} : { timeoutMs }), ...(fstatSync(0).isFIFO() || fstatSync(0).isSocket() ? { stdin: Bun.stdin.stream() } : {}) },
      {
        stdout: (chunk) => void pending.push(write("stdout", chunk)),
        stderr: (chunk) => void pending.push(write("stderr", chunk)),
        // As msb's --stream: a reader that does not take our output holds the guest back, nothing piles up here.
        room: () => (pending.length > 0 ? Promise.all(pending.splice(0)).then(() => undefined) : undefined),
      },
    );
    await Promise.all(pending);
    if (result.timedOut) {
      await write("stderr", `error: exec timed out after ${command.timeoutSeconds}s\n`);
      return 1;
    }
    // msb reports a guest killed by a signal as exit -1, which its CLI exits with as 255.
    return result.exitCode > 128 ? 255 : result.exitCode;
  } catch (error) {
    await write("stderr", `error: exec failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  } finally {
    if (booted) await local.stop(command.name);
  }
}

async function start(args: string[]): Promise<number> {
  const { name } = parseNamed("start", args, [[]]);
  if (!readSandbox(name)) return reply("sandboxNotFound", { name });
  const local = localDriver();
  if ((await statusOf(local, name)) === "Running") {
    await write("stderr", `error: sandbox still running: cannot start sandbox '${name}': already running\n`);
    return 1;
  }
  try {
    await local.start(name);
  } catch (error) {
    return failedToStart(name, error);
  }
  return 0;
}

async function stop(args: string[]): Promise<number> {
  const timeout = args.find((a) => /^--timeout=\d+$/.test(a));
  const { name } = parseNamed("stop", args, [["--force"], ...(timeout ? [[timeout]] : [])]);
  if (!readSandbox(name)) return reply("sandboxNotFound", { name });
  await localDriver().stop(name);
  return reply("stop", { name });
}

/** msb's `remove` keeps named volumes: the stopped local VM stays (unlisted) with its volume until `volume remove`. */
async function remove(args: string[]): Promise<number> {
  const { name } = parseNamed("remove", args, [["--force"]]);
  if (!readSandbox(name)) return reply("sandboxNotFound", { name });
  await localDriver().stop(name);
  rmSync(join(sandboxesDir, `${name}.json`), { force: true });
  return reply("remove", { name });
}

async function volume(args: string[]): Promise<number> {
  const { name } = parseNamed("volume remove", args.slice(1), [[]]);
  if (args[0] !== "remove") throw new UsageError(`error: the stand-in msb (a FAKE) has only \`volume remove\`, not ${JSON.stringify(args[0])}\n`);
  if (!existsSync(join(volumesDir, name))) return reply("volumeNotFound", { volume: name });
  const local = localDriver();
  const holders = (await local.list({})).filter((vm) => vm.spec.volume.name === name);
  for (const vm of holders) await local.remove(vm.name);
  if (holders.length === 0) await local.removeVolume?.(name);
  rmSync(join(volumesDir, name), { force: true });
  return reply("volumeRemove", { volume: name });
}

function storedSandboxes(): StoredSandbox[] {
  if (!existsSync(sandboxesDir)) return [];
  return readdirSync(sandboxesDir)
    .filter((file) => file.endsWith(".json"))
    .map((file) => readSandbox(file.slice(0, -".json".length)))
    .filter((sandbox): sandbox is StoredSandbox => sandbox !== undefined);
}

async function inspect(args: string[]): Promise<number> {
  const { name } = parseNamed("inspect", args, [["--format=json"]]);
  const sandbox = readSandbox(name);
  if (!sandbox) return reply("sandboxNotFound", { name });
  await write("stdout", `${JSON.stringify(inspectJson(sandbox, await statusOf(localDriver(), name)), null, 2)}\n`);
  return 0;
}

async function list(args: string[]): Promise<number> {
  const { format, labels } = parseList(args);
  const local = localDriver();
  const matching = storedSandboxes().filter((s) => Object.entries(labels).every(([key, value]) => s.labels[key] === value));
  if (format === "quiet") {
    await write("stdout", matching.map((s) => `${s.name}\n`).join(""));
    return 0;
  }
  const entries = await Promise.all(matching.map(async (sandbox) => ({ sandbox, status: await statusOf(local, sandbox.name) })));
  await write("stdout", `${JSON.stringify(listJson(entries), null, 2)}\n`);
  return 0;
}

const COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  "--version": async (args) => (args.length === 0 ? reply("version") : Promise.reject(new UsageError("error: unexpected argument\n"))),
  doctor: async () => reply("doctor"),
  create,
  exec,
  start,
  stop,
  remove,
  volume,
  inspect,
  list,
};

async function main(): Promise<number> {
  if (!home) {
    await write("stderr", "error: the stand-in msb (a FAKE) needs MSB_HOME\n");
    return 1;
  }
  const [command = "", ...args] = process.argv.slice(2);
  const run = COMMANDS[command];
  try {
    if (!run) throw new UsageError(`error: unrecognized subcommand '${command}'\n\nUsage: msb [OPTIONS] <COMMAND>\n\nFor more information, try '--help'.\n`);
    return await run(args);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    await write("stderr", error.stderr);
    return error.exitCode;
  }
}

if (import.meta.main) process.exit(await main());
