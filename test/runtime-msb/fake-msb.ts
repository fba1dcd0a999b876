// A FAKE msb, for the driver's process handling where a real microVM cannot boot on this machine
// (exec streaming, exit codes, timeouts, kill-tree, the already-exists retry). It records every call
// to FAKE_MSB_DIR/calls.jsonl and answers from FAKE_MSB_DIR/scenario.json. Never used outside tests.
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export type FakeStep = {
  stdout?: string;
  stderr?: string;
  exitCode?: number;
  /** Written in order, each after its delay, before `stdout`/`stderr`. */
  chunks?: { stream: "stdout" | "stderr"; text: string; delayMs?: number; waitForFile?: string }[];
  /** Hang until this file exists (then exit with `exitCode`), like a guest command that runs on. */
  waitForFile?: string;
  /** Create this file before answering (e.g. the kill-tree sweep "killing" the hung command). */
  touchFile?: string;
};

/** Steps per command key, consumed in order; the last one repeats. */
export type FakeScenario = Record<string, FakeStep[]>;

export type FakeCall = { key: string; args: string[]; env: Record<string, string | undefined>; stdinEof: boolean };

export function commandKey(args: string[]): string {
  if (args[0] === "volume") return `volume ${args[1]}`;
  if (args[0] === "exec" && args.includes("/bin/sh") && args.some((a) => a.includes("for sig in STOP KILL KILL"))) return "exec-kill-tree";
  return args[0] ?? "";
}

async function stdinAtEof(): Promise<boolean> {
  const reader = Bun.stdin.stream().getReader();
  const timeout = new Promise<"open">((resolve) => setTimeout(() => resolve("open"), 500));
  const read = reader.read().then((r) => (r.done ? "eof" : "data"));
  return (await Promise.race([read, timeout])) === "eof";
}

function write(stream: "stdout" | "stderr", text: string): Promise<void> {
  return new Promise((resolve) => (stream === "stdout" ? process.stdout : process.stderr).write(text, () => resolve()));
}

async function waitFor(path: string): Promise<void> {
  while (!existsSync(path)) await Bun.sleep(10);
}

function nextStep(dir: string, key: string): FakeStep {
  const scenario = JSON.parse(readFileSync(join(dir, "scenario.json"), "utf8")) as FakeScenario;
  const steps = scenario[key] ?? [];
  const counter = join(dir, `count-${key.replace(/\W/g, "_")}`);
  const used = existsSync(counter) ? Number(readFileSync(counter, "utf8")) : 0;
  writeFileSync(counter, String(used + 1));
  return steps[Math.min(used, steps.length - 1)] ?? { stderr: `error: fake msb has no step for "${key}"\n`, exitCode: 1 };
}

/** The secret values the driver hands msb for `--secret` (SANDBOX_SECRET_*), recorded so tests can see them. */
function secretEnv(): Record<string, string> {
  return Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[0].startsWith("SANDBOX_SECRET_") && e[1] !== undefined));
}

async function main(): Promise<void> {
  const dir = process.env.FAKE_MSB_DIR;
  if (!dir) throw new Error("FAKE_MSB_DIR is not set");
  const args = process.argv.slice(2);
  const key = commandKey(args);
  const env = { MSB_BACKEND: process.env.MSB_BACKEND, MSB_HOME: process.env.MSB_HOME, NO_COLOR: process.env.NO_COLOR, SECRET_TOKEN: process.env.SECRET_TOKEN, ...secretEnv() };
  const call: FakeCall = { key, args, env, stdinEof: await stdinAtEof() };
  appendFileSync(join(dir, "calls.jsonl"), `${JSON.stringify(call)}\n`);
  const step = nextStep(dir, key);
  if (step.touchFile) writeFileSync(step.touchFile, "");
  for (const chunk of step.chunks ?? []) {
    if (chunk.delayMs) await Bun.sleep(chunk.delayMs);
    if (chunk.waitForFile) await waitFor(chunk.waitForFile);
    await write(chunk.stream, chunk.text);
  }
  if (step.stdout) await write("stdout", step.stdout);
  if (step.stderr) await write("stderr", step.stderr);
  if (step.waitForFile) await waitFor(step.waitForFile);
  process.exit(step.exitCode ?? 0);
}

if (import.meta.main) await main();
