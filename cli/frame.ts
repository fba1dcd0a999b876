// The shared frame of the CLI's commands: argument parsing, --help and --json, the SDK client, and
// turning any failure into one line on stderr (plus a JSON error with --json) and an exit code.
import { parseArgs } from "node:util";
import packageJson from "../package.json" with { type: "json" };
import { createClient, type SandboxClient } from "../sdk/index";
import { resolveConnection, type Connection } from "./connection";
import { describeFailure, EXIT, UsageError, type ExitCode, type Failure } from "./errors";
import { colorEnabled, makeOutput, makePaint, type Output } from "./output";
import { terminalSafe } from "./terminal-safe";

type OptionsConfig = Record<string, { type: "string" | "boolean"; short?: string; multiple?: boolean }>;
const COMMON = { json: { type: "boolean" }, raw: { type: "boolean" }, help: { type: "boolean", short: "h" } } as const;

type Values<O extends OptionsConfig> = { [K in keyof O]?: O[K] extends { type: "boolean" } ? boolean : O[K] extends { multiple: true } ? string[] : string } & {
  json?: boolean;
  raw?: boolean;
  help?: boolean;
};
type Parsed<O extends OptionsConfig> = { values: Values<O>; positionals: string[] };

type CommandSpec<O extends OptionsConfig> = {
  /** The subcommand: `session-sandbox <name>`, and in the repository `bun run <name>`. */
  name: string;
  /** Usage lines and a description, printed by --help. */
  help: string;
  options: O;
};

type Context<O extends OptionsConfig> = {
  values: Parsed<O>["values"];
  positionals: string[];
  out: Output;
  connection: Connection;
  client: SandboxClient;
};

const EXIT_HELP = `exit codes: 0 ok, 1 the operation failed, 2 usage error, 3 the manager is unreachable
environment: SANDBOX_URL (else http://SANDBOX_HOST:SANDBOX_PORT, default http://127.0.0.1:7878),
             SANDBOX_API_TOKEN (else <data dir>/api-token), NO_COLOR`;

function parse<O extends OptionsConfig>(spec: CommandSpec<O>, argv: string[]): Parsed<O> {
  try {
    const { values, positionals } = parseArgs({ args: argv, options: { ...spec.options, ...COMMON }, allowPositionals: true, strict: true });
    return { values: values as Values<O>, positionals };
  } catch (error) {
    // util.parseArgs messages are multi-sentence; the first says what was wrong.
    throw new UsageError((error as Error).message.split(/\.\s|\n/)[0]!.trim());
  }
}

/** One line on stderr; with `json`, also `{ error: {...} }` on stdout. */
export function reportFailure(name: string, failure: Failure, json = false): void {
  const paint = makePaint(colorEnabled(process.env, Boolean(process.stderr.isTTY)));
  const fix = failure.fix ? ` — ${paint.bold("fix:")} ${failure.fix}` : "";
  // A message can carry the guest's text (a path, a command): a terminal gets it shown, not obeyed.
  const line = `${paint.red(`${name}:`)} ${failure.message}${fix}`;
  process.stderr.write(`${process.stderr.isTTY ? terminalSafe(line) : line}\n`);
  if (json) {
    process.stdout.write(JSON.stringify({ error: { code: failure.code, message: failure.message, fix: failure.fix, exitCode: failure.exitCode } }, null, 2) + "\n");
  }
}

/** Runs one command on `argv`; `main` returns its exit code (default 0) or throws. Resolves to the exit code. */
export async function executeCommand<O extends OptionsConfig>(spec: CommandSpec<O>, argv: string[], main: (context: Context<O>) => Promise<ExitCode | void>): Promise<number> {
  let tokenProblem: string | undefined;
  try {
    const { values, positionals } = parse(spec, argv);
    if (values.help) {
      process.stdout.write(`${asInvoked(spec.help.trim(), spec.name)}\n\n  --json   machine-readable output (stable keys, ISO 8601 times)\n  --raw    the guest's text as it is, escape sequences too (on a terminal they are shown, not obeyed)\n  -h, --help\n\n${EXIT_HELP}\n`);
      return EXIT.ok;
    }
    const connection = resolveConnection(process.env);
    tokenProblem = connection.tokenProblem;
    const out = makeOutput({ json: Boolean(values.json), raw: Boolean(values.raw), env: process.env, isTty: Boolean(process.stdout.isTTY) });
    const client = createClient({ url: connection.url, token: connection.token });
    return (await main({ values, positionals, out, connection, client })) ?? EXIT.ok;
  } catch (error) {
    const failure = describeFailure(error, { command: spec.name, tokenProblem });
    reportFailure(spec.name, { ...failure, fix: failure.fix && asInvoked(failure.fix, spec.name) }, argv.includes("--json"));
    return failure.exitCode;
  }
}

/**
 * Help and fixes name commands as the user ran them: `bun run vms` as this repository's package script
 * (which runs with npm_lifecycle_event set to the script's name), `session-sandbox vms` otherwise.
 */
function asInvoked(text: string, name: string): string {
  const packageScript = process.env.npm_lifecycle_event === name && process.env.npm_package_name === packageJson.name;
  return packageScript ? text : text.replace(/\bbun run (--silent )?/g, "session-sandbox ");
}

/** Refuses extra or missing positionals with the usage line. */
export function expectPositionals(positionals: string[], names: string[], optional = 0): string[] {
  const min = names.length - optional;
  if (positionals.length < min) throw new UsageError(`missing ${names.slice(positionals.length, min).map((n) => `<${n}>`).join(" ")}`);
  if (positionals.length > names.length) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[names.length])}`);
  return positionals;
}
