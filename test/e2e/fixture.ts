// Wiring for the end-to-end suites: temp projects (git repos), the real manager on the embedded runtime,
// a scripted model, and a real `opencode serve` whose per-directory config loads our plugin.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createLocalDriver } from "../../runtime/local/index";
import { createClient, type SandboxClient } from "../../sdk/index";
import { eventually } from "../actors/fixture";
import { makeTempDir } from "../helpers";
import { startManager, type ManagerProcess } from "../manager-process";
import { expectNoLeaksAndCleanUp } from "../runtime/local-target";
import type { OpencodeServer } from "./opencode-server";

export const ROOT = join(import.meta.dir, "../..");
export const PLUGIN = `file://${join(ROOT, "plugin/index.ts")}`;
export const FORGE = `file://${join(ROOT, "plugin/forge/index.ts")}`;
export const THROWING = `file://${join(ROOT, "test/e2e/fixtures/throwing-provider.ts")}`;
export const SHIM = join(ROOT, "plugin/shim");

export function makeProject(root: string, name: string): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  const git = (...args: string[]) => Bun.spawnSync(["git", "-C", dir, "-c", "user.email=e2e@test", "-c", "user.name=e2e", ...args]);
  git("init", "-q");
  git("commit", "-q", "--allow-empty", "-m", "init");
  return dir;
}

/**
 * An offline OpenCode with the scripted model and `plugins`. OpenCode's snapshots (host `git add` and
 * `write-tree` runs over the whole work tree around every step) are off unless `snapshot` is asked for:
 * they are a large part of a prompting test's CPU and none of these tests looks at them. agent-task keeps
 * them on, so a whole agent task still runs as a user's OpenCode does, host snapshots of the guest's
 * writes included.
 */
export function opencodeConfig(llmUrl: string, plugins: Array<string | [string, Record<string, unknown>]>, options: { snapshot?: boolean } = {}): Record<string, unknown> {
  return {
    autoupdate: false,
    snapshot: options.snapshot ?? false,
    share: "disabled",
    model: "mock/scripted",
    small_model: "mock/scripted",
    shell: SHIM,
    plugin: plugins,
    permission: { bash: "allow", external_directory: "allow" },
    provider: {
      mock: {
        npm: "@ai-sdk/openai-compatible",
        name: "Mock",
        options: { baseURL: llmUrl, apiKey: "x" },
        models: { scripted: { name: "Scripted", tool_call: true, limit: { context: 100000, output: 4000 } } },
      },
    },
  };
}

/** A manager on the embedded runtime, with its own cgroup parent; `cleanUp` removes every VM and checks for leaks. */
export type TestManager = { process: ManagerProcess; client: SandboxClient; dataDir: string; cleanUp(): Promise<void> };

export async function startTestManager(image: string, env: Record<string, string> = {}): Promise<TestManager> {
  const dataDir = makeTempDir("ss-e2e-manager-");
  const cgroupParent = `ss-e2e-${randomBytes(3).toString("hex")}`;
  const proc = await startManager(dataDir, { SANDBOX_CGROUP_PARENT: cgroupParent, SANDBOX_RUNTIME: "local", SANDBOX_ROOTFS_DIR: image, ...env });
  const client = createClient({ url: proc.url, token: proc.token });
  const stateDir = join(proc.runtimeDir, "local");
  return {
    process: proc,
    client,
    dataDir,
    async cleanUp() {
      if (proc.proc.exitCode === null && proc.proc.signalCode === null) {
        await client.vms.sweep({ idleForMs: 0 }).catch(() => undefined);
        await proc.stop();
      }
      const driver = createLocalDriver({ stateDir, rootfsDir: image, cgroupParent });
      for (const vm of await driver.list({}).catch(() => [])) await driver.remove(vm.name);
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(proc.runtimeDir, { recursive: true, force: true });
      const scratch = makeTempDir("ss-e2e-leakcheck-");
      expectNoLeaksAndCleanUp({ driver: createLocalDriver({ stateDir: scratch, rootfsDir: image, cgroupParent }), image, stateDir: scratch, cgroupParent });
    },
  };
}

/**
 * Our plugin's options for this manager: its URL, and the token by file (0600, in `root`, outside every
 * repository, so a grep of a repository never finds it).
 */
export function pluginOptions(root: string, manager: TestManager): { url: string; tokenFile: string } {
  const tokenFile = join(root, "token");
  writeFileSync(tokenFile, manager.process.token, { mode: 0o600 });
  return { url: manager.process.url, tokenFile };
}

/** The VM volumes the manager's runtime holds right now. */
export function volumesOf(manager: TestManager): string[] {
  const dir = join(manager.process.runtimeDir, "local", "volumes");
  return existsSync(dir) ? readdirSync(dir) : [];
}

export type ToolPart = {
  type: "tool";
  tool: string;
  callID: string;
  state: { status: string; input: Record<string, unknown>; output?: string; error?: string; metadata?: Record<string, unknown> };
};
type Message = { info: { id: string; role: string }; parts: Array<{ type: string } & Partial<ToolPart>> };

export async function createSession(oc: OpencodeServer, body: Record<string, unknown> = {}): Promise<string> {
  return (await oc.call<{ id: string }>("POST", "/session", { title: "e2e", ...body })).id;
}

/** One agent turn with the scripted model (or `modelID` of the mock provider); returns the tool parts it produced (newest last). */
export async function prompt(oc: OpencodeServer, sessionID: string, text: string, modelID?: string): Promise<ToolPart[]> {
  const before = new Set((await toolParts(oc, sessionID)).map((part) => part.callID));
  const model = modelID ? { model: { providerID: "mock", modelID } } : {};
  await oc.call("POST", `/session/${sessionID}/message`, { parts: [{ type: "text", text }], ...model });
  return (await toolParts(oc, sessionID)).filter((part) => !before.has(part.callID));
}

export async function toolParts(oc: OpencodeServer, sessionID: string): Promise<ToolPart[]> {
  const messages = await oc.call<Message[]>("GET", `/session/${sessionID}/message`);
  return messages.flatMap((message) => message.parts.filter((part): part is ToolPart => part.type === "tool"));
}

/** `!` shell mode: POST /session/:id/shell; returns the bash part it recorded. */
export async function shellMode(oc: OpencodeServer, sessionID: string, command: string): Promise<ToolPart> {
  const result = await oc.call<{ parts: Array<{ type: string } & Partial<ToolPart>> }>("POST", `/session/${sessionID}/shell`, { agent: "build", command });
  const part = result.parts.find((p): p is ToolPart => p.type === "tool");
  if (!part) throw new Error(`shell mode recorded no tool part: ${JSON.stringify(result).slice(0, 500)}`);
  return part;
}

export { eventually };
