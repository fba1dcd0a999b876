// The stand-in msb's (a FAKE, see stand-in-msb.ts) argument parser: it accepts exactly the argument vectors
// runtime/msb builds and refuses anything else as msb's parser (clap) does: `error: …`, a usage line, exit 2,
// in the texts real msb printed (fixtures/stand-in-replies-0.6.18.json). Refusals of argv that real msb
// would accept but the driver never writes say they are the stand-in's own.
import repliesFixture from "./fixtures/stand-in-replies-0.6.18.json";

const replies = repliesFixture.replies;

/** What `msb create` stores for a sandbox: the stand-in's "msb config", rendered by inspect. */
export type StoredSandbox = {
  name: string;
  image: string;
  cpus: number;
  memoryMib: number;
  /** `--mount-dir` / `--mount-file`, in argv order. */
  binds: { host: string; guest: string; readOnly: boolean; file: boolean }[];
  tmpSizeMib: number;
  volume: string;
  labels: Record<string, string>;
  /** `--no-net` alone, `--net=all`, or `--no-net` with `--net-rule` tokens. */
  network: { mode: "none" } | { mode: "all" } | { mode: "rules"; tokens: string[] };
  createdAt: string;
};

export type ExecCommand = { name: string; workdir: string; env: Record<string, string>; timeoutSeconds?: number; stream: boolean; argv: string[] };

/** A refusal as msb prints it: the stderr text and exit code. */
export class UsageError extends Error {
  constructor(
    readonly stderr: string,
    readonly exitCode = 2,
  ) {
    super(stderr);
  }
}

/** clap's "unexpected argument", recorded for create, exec and list; other commands get list's text with their name. */
function unexpected(command: string, arg: string): UsageError {
  const recorded = command === "create" ? replies.unexpectedCreate : command === "exec" ? replies.unexpectedExec : replies.unexpectedList;
  return new UsageError(recorded.stderr.replaceAll("--bogus", arg).replace("Usage: msb list", `Usage: msb ${command}`), recorded.exitCode ?? 2);
}

/** `--flag=value` → value; the driver always writes the `=` form. */
function valueOf(arg: string, flag: string): string | undefined {
  return arg.startsWith(`${flag}=`) ? arg.slice(flag.length + 1) : undefined;
}

/** clap's text for a value that is not a whole number, as real msb printed it (fixtures/stand-in-replies). */
function wholeNumber(value: string, flag: string, placeholder: string): number {
  if (/^[0-9]+$/.test(value)) return Number(value);
  const text = replies.fractionalCpus.stderr.replace("'0.5'", `'${value}'`).replace("'--cpus <CPUS>'", `'${flag} <${placeholder}>'`);
  throw new UsageError(text);
}

function mebibytes(value: string, flag: string): number {
  const match = /^([0-9]+)M$/.exec(value);
  if (!match) throw new UsageError(`error: invalid value '${value}' for '${flag}': the stand-in msb (a FAKE) takes only <N>M\n\nFor more information, try '--help'.\n`);
  return Number(match[1]);
}

function bind(value: string, file: boolean): StoredSandbox["binds"][number] {
  const [host = "", guest = "", options, ...rest] = value.split(":");
  if (!host.startsWith("/") || !guest.startsWith("/") || (options !== undefined && options !== "ro") || rest.length > 0) {
    throw new UsageError(`error: invalid value '${value}' for '--mount-${file ? "file" : "dir"}': expected SOURCE:DEST[:ro]\n\nFor more information, try '--help'.\n`);
  }
  return { host, guest, readOnly: options === "ro", file };
}

/** `create IMAGE --name= --cpus= --memory= [--mount-dir=]… [--mount-file=]… --tmpfs=/tmp: --mount-named=V:/home/agent [--label=]… NETWORK --quiet [--replace]`. */
export function parseCreate(args: string[]): { sandbox: Omit<StoredSandbox, "createdAt">; replace: boolean } {
  const [image, ...flags] = args;
  if (!image || image.startsWith("-")) throw new UsageError("error: the stand-in msb (a FAKE) needs IMAGE first, as the driver writes it\n\nUsage: msb create [OPTIONS] [IMAGE]\n\nFor more information, try '--help'.\n");
  const sandbox: Omit<StoredSandbox, "createdAt"> = { name: "", image, cpus: 0, memoryMib: 0, binds: [], tmpSizeMib: 0, volume: "", labels: {}, network: { mode: "none" } };
  let noNet = false;
  let netAll = false;
  const rules: string[] = [];
  let quiet = false;
  let replace = false;
  for (const arg of flags) {
    let value: string | undefined;
    if ((value = valueOf(arg, "--name")) !== undefined) sandbox.name = value;
    else if ((value = valueOf(arg, "--cpus")) !== undefined) sandbox.cpus = wholeNumber(value, "--cpus", "CPUS");
    else if ((value = valueOf(arg, "--memory")) !== undefined) sandbox.memoryMib = mebibytes(value, "--memory <MEMORY>");
    else if ((value = valueOf(arg, "--mount-dir")) !== undefined) sandbox.binds.push(bind(value, false));
    else if ((value = valueOf(arg, "--mount-file")) !== undefined) sandbox.binds.push(bind(value, true));
    else if ((value = valueOf(arg, "--tmpfs")) !== undefined && value.startsWith("/tmp:")) sandbox.tmpSizeMib = mebibytes(value.slice(5), "--tmpfs");
    else if ((value = valueOf(arg, "--mount-named")) !== undefined && value.endsWith(":/home/agent")) sandbox.volume = value.slice(0, -":/home/agent".length);
    else if ((value = valueOf(arg, "--label")) !== undefined && value.includes("=")) sandbox.labels[value.slice(0, value.indexOf("="))] = value.slice(value.indexOf("=") + 1);
    else if ((value = valueOf(arg, "--net-rule")) !== undefined) rules.push(value);
    else if (arg === "--no-net") noNet = true;
    else if (arg === "--net=all") netAll = true;
    else if (arg === "--quiet") quiet = true;
    else if (arg === "--replace") replace = true;
    else throw unexpected("create", arg);
  }
  if (!sandbox.name || !sandbox.cpus || !sandbox.memoryMib || !sandbox.tmpSizeMib || !sandbox.volume || !quiet || noNet === netAll || (netAll && rules.length > 0)) {
    throw new UsageError(`error: the stand-in msb (a FAKE) accepts only the create vectors runtime/msb/create-args.ts builds; got ${JSON.stringify(args)}\n\nFor more information, try '--help'.\n`);
  }
  sandbox.network = netAll ? { mode: "all" } : rules.length > 0 ? { mode: "rules", tokens: rules } : { mode: "none" };
  return { sandbox, replace };
}

/**
 * `exec NAME --no-tty --stream --quiet --workdir=CWD [--env=K=V]… [--timeout=Ns] -- ARGV…`, and the kill
 * sweep's `exec NAME --no-tty --quiet --timeout=30s -- /bin/sh -c SCRIPT sh MARKER=ID`.
 */
export function parseExec(args: string[]): ExecCommand {
  const [name, ...rest] = args;
  const end = rest.indexOf("--");
  if (!name || name.startsWith("-") || end < 0 || end === rest.length - 1) {
    throw new UsageError("error: the stand-in msb (a FAKE) needs NAME, flags, `--` and a command, as the driver writes them\n\nUsage: msb exec [OPTIONS] <NAME> [-- <COMMAND>...]\n\nFor more information, try '--help'.\n");
  }
  const command: ExecCommand = { name, workdir: "/", env: {}, stream: false, argv: rest.slice(end + 1) };
  let noTty = false;
  let quiet = false;
  for (const arg of rest.slice(0, end)) {
    let value: string | undefined;
    if ((value = valueOf(arg, "--workdir")) !== undefined) command.workdir = value;
    else if ((value = valueOf(arg, "--env")) !== undefined && value.includes("=")) command.env[value.slice(0, value.indexOf("="))] = value.slice(value.indexOf("=") + 1);
    else if ((value = valueOf(arg, "--timeout")) !== undefined && /^[0-9]+s$/.test(value)) command.timeoutSeconds = Number(value.slice(0, -1));
    else if (arg === "--no-tty") noTty = true;
    else if (arg === "--quiet") quiet = true;
    else if (arg === "--stream") command.stream = true;
    else throw unexpected("exec", arg);
  }
  if (!noTty || !quiet) throw new UsageError("error: the stand-in msb (a FAKE) runs only --no-tty --quiet execs, as the driver writes them\n\nUsage: msb exec [OPTIONS] <NAME> [-- <COMMAND>...]\n\nFor more information, try '--help'.\n");
  return command;
}

/** `list --format=json [--label=K=V]…` or `list --quiet`. */
export function parseList(args: string[]): { format: "json" | "quiet"; labels: Record<string, string> } {
  if (args.length === 1 && args[0] === "--quiet") return { format: "quiet", labels: {} };
  const [format, ...rest] = args;
  if (format !== "--format=json") throw unexpected("list", format ?? "");
  const labels: Record<string, string> = {};
  for (const arg of rest) {
    const value = valueOf(arg, "--label");
    if (value === undefined || !value.includes("=")) throw unexpected("list", arg);
    labels[value.slice(0, value.indexOf("="))] = value.slice(value.indexOf("=") + 1);
  }
  return { format: "json", labels };
}

/** Exactly `[NAME, ...allowed]` in the driver's order, e.g. `stop NAME --timeout=10`. */
export function parseNamed(command: string, args: string[], allowed: string[][]): { name: string; flags: string[] } {
  const [name, ...flags] = args;
  if (!name || name.startsWith("-")) throw new UsageError(`error: the following required arguments were not provided:\n  <NAME>\n\nUsage: msb ${command} <NAME>\n\nFor more information, try '--help'.\n`);
  if (!allowed.some((form) => form.length === flags.length && form.every((flag, i) => flag === flags[i]))) throw unexpected(command, flags[0] ?? "");
  return { name, flags };
}
