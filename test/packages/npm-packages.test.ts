// The packages as a user gets them. `npm pack` builds all three (scripts/packages/build.ts), a
// registry on loopback (verdaccio, test/fixtures/npm-registry.ts, no uplinks) takes them, and from fresh directories:
// (a) a Node script installs the SDK by name and runs a command in a session's VM; (b) a strict TypeScript
// project type-checks against it (TypeScript 5 and 7, nodenext and bundler resolution, skipLibCheck off);
// (d) `npm i -g` of the CLI answers --version and runs `exec`; (c) a real `opencode serve` whose
// opencode.json names only the plugin's npm name installs it from the registry, runs `!hostname` in the VM,
// and fails closed once the manager is stopped. Also: what each tarball holds, and its size.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildAndPack, type BuiltPackages } from "../../scripts/packages/build";
import { makeTempDir } from "../helpers";
import { prepareLocalRuntime } from "../runtime/local-target";
import { createSession, shellMode, startTestManager, type TestManager } from "../e2e/fixture";
import { startOpencode, type OpencodeServer } from "../e2e/opencode-server";
import { startNpmRegistry, type NpmRegistry } from "../fixtures/npm-registry";

setDefaultTimeout(180_000);

const ROOT = join(import.meta.dir, "../..");
const VERSION = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;

let scratch: string;
let tarballs: BuiltPackages;
let registry: NpmRegistry;
let manager: TestManager;
let repo: string;
let oc: OpencodeServer | undefined;

type Run = { exitCode: number; stdout: string; stderr: string };

async function run(argv: string[], cwd: string, env: Record<string, string> = {}): Promise<Run> {
  // No retries: a registry on loopback answers at once, and nothing else may be asked.
  const proc = Bun.spawn(argv, { cwd, env: { ...registry.npmEnv, npm_config_fetch_retries: "0", ...env }, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [exitCode, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { exitCode, stdout, stderr };
}

/** A fresh directory with a package.json, as `npm init` would leave it. */
function freshProject(name: string): string {
  const dir = join(scratch, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name, version: "1.0.0", private: true, type: "module" }));
  return dir;
}

/** The paths inside a tarball, without npm's leading `package/`. */
async function tarballFiles(tarball: string): Promise<string[]> {
  const listed = await run(["tar", "-tzf", tarball], scratch);
  expect(listed.exitCode).toBe(0);
  return listed.stdout.trim().split("\n").map((path) => path.replace(/^package\//, ""));
}

beforeAll(async () => {
  scratch = makeTempDir("ss-packages-");
  const image = await prepareLocalRuntime();
  registry = await startNpmRegistry(join(scratch, "registry"));
  tarballs = await buildAndPack(join(scratch, "build"), join(scratch, "tarballs"));
  for (const tarball of Object.values(tarballs)) await registry.publish(tarball);
  manager = await startTestManager(image);
  repo = join(scratch, "repo");
  mkdirSync(repo);
  expect((await run(["git", "init", "-q", repo], scratch)).exitCode).toBe(0);
  await manager.client.sessions.register({ id: "ses_packages", directory: repo });
}, 600_000);

afterAll(async () => {
  await oc?.stop();
  await manager?.cleanUp();
  await registry?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
}, 120_000);

describe("npm pack output", () => {
  test("@session-sandbox/sdk: the bundle and its declarations only, no sources of the manager, under 100 KB", async () => {
    const files = await tarballFiles(tarballs.sdk);
    expect(files).toContain("dist/index.js");
    expect(files).toContain("dist/index.d.ts");
    expect(files).toContain("dist/connection.js");
    expect(files).toContain("dist/generated/openapi.d.ts");
    expect(files.filter((file) => !/^(dist\/.*\.(js|d\.ts)|package\.json|README\.md)$/.test(file))).toEqual([]);
    expect(statSync(tarballs.sdk).size).toBeLessThan(100 * 1024);
    // No declaration names the server: its types come from the OpenAPI document.
    const unpacked = join(scratch, "sdk-unpacked");
    mkdirSync(unpacked);
    await run(["tar", "-xzf", tarballs.sdk, "-C", unpacked], scratch);
    for (const file of files.filter((path) => path.endsWith(".d.ts"))) {
      expect(readFileSync(join(unpacked, "package", file), "utf8")).not.toMatch(/from "\.\.\/|import\("\.\.\/\.\.|elysia|bun:/);
    }
  });

  test("@session-sandbox/opencode: the plugin bundle, the shim, the helper's C sources; depends on the SDK only", async () => {
    const files = await tarballFiles(tarballs.opencode);
    for (const file of ["dist/index.js", "dist/shim", "dist/shim-main.js", "dist/shim-helper/build.sh", "dist/shim-helper/main.c", "README.md"]) expect(files).toContain(file);
    expect(files.some((file) => file.includes(".build"))).toBe(false);
    expect(statSync(tarballs.opencode).size).toBeLessThan(300 * 1024);
    const manifest = JSON.parse((await run(["tar", "-xzOf", tarballs.opencode, "package/package.json"], scratch)).stdout) as { dependencies: Record<string, string> };
    expect(manifest.dependencies).toEqual({ "@session-sandbox/sdk": VERSION });
  });

  test("session-sandbox (the CLI and the manager): its code and its bundled dependencies; no tests, benchmarks or build output", async () => {
    const files = await tarballFiles(tarballs.cli);
    for (const file of ["cli/session-sandbox.ts", "app/main.ts", "runtime/local/exec-agent.c", "sdk/generated/openapi.d.ts", "node_modules/elysia/package.json", "README.md", "CHANGELOG.md"]) expect(files).toContain(file);
    expect(files.filter((file) => /^(test|bench|packages|\.ci)\/|\/\.build\//.test(file))).toEqual([]);
    expect(statSync(tarballs.cli).size).toBeLessThan(8 * 1024 * 1024);
  });
});

describe("installed from the registry", () => {
  test("(a) a Node script installs @session-sandbox/sdk by name and runs a command in the session's VM", async () => {
    const dir = freshProject("node-consumer");
    expect(await run(["npm", "install", "@session-sandbox/sdk"], dir)).toMatchObject({ exitCode: 0 });
    writeFileSync(
      join(dir, "run.mjs"),
      `import { createClient, SessionNotFoundError } from "@session-sandbox/sdk";
const client = createClient({ url: process.env.SANDBOX_URL, token: process.env.SANDBOX_API_TOKEN });
const result = await client.run("ses_packages", { command: "hostname; pwd" });
let missing = "";
try { await client.sessions.get("ses_nobody"); } catch (error) { missing = error instanceof SessionNotFoundError ? error.code : String(error); }
console.log(JSON.stringify({ ...result, missing }));
`,
    );
    const node = await run(["node", "run.mjs"], dir, { SANDBOX_URL: manager.process.url, SANDBOX_API_TOKEN: manager.process.token });
    expect(node.stderr).toBe("");
    const answer = JSON.parse(node.stdout) as { exitCode: number; stdout: string; vmName: string; missing: string };
    const [hostname, pwd] = answer.stdout.trim().split("\n");
    expect({ exitCode: answer.exitCode, hostname, pwd, missing: answer.missing }).toEqual({ exitCode: 0, hostname: answer.vmName, pwd: repo, missing: "SESSION_NOT_FOUND" });
    expect(hostname).toStartWith("ocm-session-");
  });

  test("(b) a clean strict TypeScript project type-checks against the SDK: TypeScript 5 and 7, nodenext and bundler, skipLibCheck off", async () => {
    const dir = freshProject("ts-consumer");
    expect(await run(["npm", "install", "@session-sandbox/sdk"], dir)).toMatchObject({ exitCode: 0 });
    writeFileSync(
      join(dir, "consumer.ts"),
      `import { createClient, SandboxError, type SandboxEvent, type Session, type SessionSandboxUpdate } from "@session-sandbox/sdk";
import { resolveConnection } from "@session-sandbox/sdk/connection";

const client = createClient({ url: resolveConnection().url, token: "token" });

export async function use(): Promise<string> {
  const session: Session = await client.sessions.register({ id: "ses_x", directory: "/srv/project" });
  const change: SessionSandboxUpdate = { sandboxed: true, resources: { cpus: 2 } };
  const view = await client.sandbox.set(session.id, change);
  const cpus: number = view.resources.effective.cpus;
  for await (const event of client.events()) {
    const type: SandboxEvent["type"] = event.type;
    if (type === "vm") break;
  }
  // @ts-expect-error directory is required
  await client.sessions.register({ id: "ses_y" });
  // @ts-expect-error cpus is a number
  await client.sandbox.set(session.id, { resources: { cpus: "2" } });
  try {
    const result = await client.run(session.id, { command: "hostname" });
    return \`\${result.stdout} \${cpus}\`;
  } catch (error) {
    return error instanceof SandboxError ? error.code : "?";
  }
}
`,
    );
    const compilers = { "TypeScript 5": join(ROOT, "node_modules/typescript-5/bin/tsc"), "TypeScript 7": join(ROOT, "node_modules/typescript/bin/tsc") };
    for (const [compiler, tsc] of Object.entries(compilers)) {
      for (const [module, moduleResolution] of [["nodenext", "nodenext"], ["preserve", "bundler"]]) {
        const compilerOptions = { strict: true, noEmit: true, target: "ES2022", module, moduleResolution, skipLibCheck: false, lib: ["ES2022", "DOM"], types: [] };
        writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, files: ["consumer.ts"] }));
        const checked = await run(["node", tsc, "-p", "."], dir);
        expect({ compiler, moduleResolution, ...checked }).toEqual({ compiler, moduleResolution, exitCode: 0, stdout: "", stderr: "" });
      }
    }
  });

  test("(d) `npm i -g session-sandbox` gives a working `session-sandbox --version` and `exec`", async () => {
    const prefix = join(scratch, "global");
    const installed = await run(["npm", "install", "--global", "--prefix", prefix, "session-sandbox"], scratch);
    expect(installed).toMatchObject({ exitCode: 0 });
    const cli = join(prefix, "bin/session-sandbox");
    const elsewhere = freshProject("cli-user");
    expect(await run([cli, "--version"], elsewhere)).toEqual({ exitCode: 0, stdout: `session-sandbox ${VERSION}\n`, stderr: "" });
    const exec = await run([cli, "exec", "ses_packages", "--", "hostname; pwd"], elsewhere, { SANDBOX_URL: manager.process.url, SANDBOX_API_TOKEN: manager.process.token });
    expect(exec.stderr).toBe("");
    const [hostname, pwd] = exec.stdout.trim().split("\n");
    expect({ exitCode: exec.exitCode, pwd }).toEqual({ exitCode: 0, pwd: repo });
    expect(hostname).toStartWith("ocm-session-");
  });

  test("(c) a real OpenCode with only `\"plugin\": [\"@session-sandbox/opencode\"]` installs it from the registry, runs `!hostname` in the VM, and fails closed without the manager", async () => {
    const root = join(scratch, "opencode");
    const project = join(root, "project");
    mkdirSync(project, { recursive: true });
    await run(["git", "init", "-q", project], root);
    // The documented minimal opencode.json: the plugin's npm name; the manager's URL and token from the environment.
    oc = await startOpencode({
      root,
      projectDir: project,
      config: { plugin: ["@session-sandbox/opencode"] },
      env: { npm_config_registry: registry.url, SANDBOX_URL: manager.process.url, SANDBOX_API_TOKEN: manager.process.token },
    });
    const sessionID = await createSession(oc);
    const part = await shellMode(oc, sessionID, "hostname; pwd");
    const [hostname, pwd] = String(part.state.output ?? "").trim().split("\n");
    expect({ status: part.state.status, pwd }).toEqual({ status: "completed", pwd: project });
    expect(hostname).toStartWith("ocm-session-");
    expect((await manager.client.sandbox.get(sessionID)).vmName).toBe(hostname!);
    // Installed by OpenCode, from the registry, not from this checkout.
    expect(existsSync(join(root, "home/.cache/opencode/packages/@session-sandbox/opencode@latest/node_modules/@session-sandbox/opencode/dist/shim"))).toBe(true);

    await manager.process.stop();
    const marker = join(scratch, "ran-on-the-host");
    const refused = await shellMode(oc, sessionID, `touch ${marker}; hostname`);
    expect(String(refused.state.output ?? refused.state.error ?? "")).toContain("not run");
    expect(existsSync(marker)).toBe(false);
  });
});
