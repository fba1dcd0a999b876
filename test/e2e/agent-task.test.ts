// A task a coding agent really does, end to end: a real `opencode serve` with a scripted
// model, the real manager on the embedded runtime, and a small real project. The agent's bash tool runs
// `npm ci` against a real npm registry (verdaccio on the host's loopback, reached through the session's
// egress allowlist, which opens that one host:port), `npm test`, `make`, a venv install from a vendored
// wheel, and a command silent for 15 s — all in the session's VM, none of it on the host.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, globSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { startNpmRegistry, type NpmRegistry } from "../fixtures/npm-registry";
import { makeTempDir } from "../helpers";
import { prepareLocalRuntime } from "../runtime/local-target";
import { GUEST_STAMP, writeAgentProject, writeNpmPackages, type LockedPackage } from "./fixtures/agent-project";
import { createSession, eventually, makeProject, opencodeConfig, PLUGIN, pluginOptions, prompt, startTestManager, type TestManager, type ToolPart } from "./fixture";
import { startMockLlm, type MockLlm } from "./mock-llm";
import { startOpencode, type OpencodeServer } from "./opencode-server";

// Per file: bun applies the preload's default only to the first file of a multi-file run.
setDefaultTimeout(120_000);

let root: string;
let project: string;
let registry: NpmRegistry;
let manager: TestManager;
let llm: MockLlm;
let oc: OpencodeServer;
let outsideMarker: string;
let sessionID: string;
let vmName: string;
/** What the guest calls the registry: the host alias, which its proxy maps to the host's loopback. */
let guestRegistry: string;

/** Publishes the fixture packages from the host and returns them as the lockfile pins them. */
async function publishPackages(): Promise<LockedPackage[]> {
  for (const dir of writeNpmPackages(join(root, "packages"))) await registry.publish(dir);
  const integrity = async (name: string) => (await registry.packument(name)).versions["1.0.0"]!.dist.integrity;
  return [
    { name: "tiny-greet", version: "1.0.0", integrity: await integrity("tiny-greet"), dependencies: { "tiny-pad": "1.0.0" } },
    { name: "tiny-pad", version: "1.0.0", integrity: await integrity("tiny-pad") },
  ];
}

beforeAll(async () => {
  expect(existsSync(GUEST_STAMP)).toBe(false); // the guest-only file the project's builds look for
  const image = await prepareLocalRuntime();
  root = makeTempDir("ss-e2e-agent-task-");
  registry = await startNpmRegistry(join(root, "registry"));
  guestRegistry = `http://host.sandbox.internal:${registry.port}/`;
  project = makeProject(root, "app");
  writeAgentProject(project, guestRegistry, await publishPackages());
  outsideMarker = join(root, "outside-marker");
  writeFileSync(outsideMarker, "host only\n");
  manager = await startTestManager(image);
  llm = startMockLlm();
  oc = await startOpencode({ root, projectDir: project, config: opencodeConfig(llm.url, [[PLUGIN, pluginOptions(root, manager)]], { snapshot: true }) });
  sessionID = await createSession(oc);
  await eventually(() => manager.client.sessions.get(sessionID).then(() => true, () => false), 30_000);
  await manager.client.sandbox.set(sessionID, { network: { mode: "allowlist", allow: [`host.sandbox.internal:${registry.port}`] } });
}, 600_000);

afterAll(async () => {
  await oc?.stop();
  llm?.stop();
  await manager?.cleanUp();
  await registry?.stop();
  if (root) rmSync(root, { recursive: true, force: true });
}, 120_000);

/** One agent bash call; it must have completed in the session's VM with exit 0. */
async function agentRuns(command: string): Promise<string> {
  const [part] = await prompt(oc, sessionID, `RUN:${command}`);
  expect(part?.tool).toBe("bash");
  expect(part?.state.status).toBe("completed");
  expect(part?.state.metadata).toMatchObject({ sandbox: true, sandboxProvider: "session-sandbox", exit: 0 });
  vmName ??= String((part as ToolPart).state.metadata!.vmName);
  expect(part?.state.metadata?.vmName).toBe(vmName);
  return part!.state.output!;
}

describe("an agent's task in a real project", () => {
  test("the session's allowlist opens only the registry's host:port → the registry answers; the manager's port and 127.0.0.1 are refused by the proxy", async () => {
    const status = (label: string, curlArgs: string) => `curl -s -o /dev/null --max-time 10 -w '${label} %{http_code}\\n' ${curlArgs}`;
    const managerPort = new URL(manager.process.url).port;
    const output = await agentRuns(
      [
        `hostname; test -e ${outsideMarker} && echo OUTSIDE-VISIBLE || echo OUTSIDE-HIDDEN`,
        status("registry", `${guestRegistry}-/ping`),
        status("manager", `http://host.sandbox.internal:${managerPort}/api/health`),
        status("loopback", `--noproxy '' -x "$HTTP_PROXY" http://127.0.0.1:${registry.port}/-/ping`),
      ].join("; "),
    );
    // The agent hears why each was refused, and the narrowest fix (the alias with its port, never all of the host's ports).
    expect(output.split("\n").slice(1)).toEqual([
      "OUTSIDE-HIDDEN",
      "registry 200",
      "manager 403",
      "loopback 403",
      `session-sandbox: the network policy refused host.sandbox.internal:${managerPort}: host.sandbox.internal is not in the allowlist; add "host.sandbox.internal:${managerPort}" to network.allow (\`session-sandbox network ${sessionID} allow host.sandbox.internal:${registry.port} host.sandbox.internal:${managerPort}\`)`,
      `session-sandbox: the network policy refused 127.0.0.1:${registry.port}: 127.0.0.1 is in the loopback range 127.0.0.0/8; add the keyword "loopback" (or "host") to network.allow to reach it`,
      "",
    ]);
    expect(output.split("\n")[0]).not.toBe(hostname());
  });

  test("an agent installs npm dependencies from a loopback registry through the allowlist, runs the tests, builds C with make and installs a Python wheel in a venv, all inside the VM", async () => {
    const install = await agentRuns("npm ci");
    expect(install).toMatch(/added 2 packages/);
    expect(JSON.parse(readFileSync(join(project, "node_modules/tiny-greet/package.json"), "utf8"))).toMatchObject({ name: "tiny-greet", version: "1.0.0" });
    expect(existsSync(join(project, "node_modules/tiny-pad/index.js"))).toBe(true);
    // Every registry request went through the VM's proxy, allowed by the one entry.
    const proxied = manager.process.stderrLines.filter((line) => line.includes('"egress allowed"') && line.includes(`host.sandbox.internal:${registry.port}`));
    expect(proxied.length).toBeGreaterThanOrEqual(2); // at least the two tarballs
    expect(proxied.every((line) => line.includes(`"rule":"allow host.sandbox.internal:${registry.port}"`))).toBe(true);

    const tests = await agentRuns("npm test");
    expect(tests).toContain("# pass 2");
    expect(tests).toContain("# fail 0");

    const build = await agentRuns("make && ./hello");
    expect(build).toContain("cc -O2");
    expect(build.trim().endsWith("hello from C, built in guest")).toBe(true);
    expect(readFileSync(join(project, "hello")).includes("built in guest")).toBe(true); // the binary on the host's disk says so too

    const python = await agentRuns(
      `python3 -m venv .venv && .venv/bin/pip install --no-index --find-links ./wheels tinycalc && .venv/bin/python -c 'import tinycalc; print("tinycalc", tinycalc.add(2, 3), tinycalc.where())'`,
    );
    expect(python).toContain("Successfully installed tinycalc-0.1.0");
    expect(python.trim().endsWith("tinycalc 5 guest")).toBe(true);
    expect(globSync(join(project, ".venv/lib/python3*/site-packages/tinycalc/__init__.py")).length).toBe(1);

    // Nothing ran on the host: no npm or pip cache under OpenCode's HOME; the guest's HOME holds them.
    expect(existsSync(join(root, "home/.npm"))).toBe(false);
    expect(existsSync(join(root, "home/.cache/pip"))).toBe(false);
    expect(await agentRuns("test -d ~/.npm/_cacache && echo npm-cache-in-guest")).toBe("npm-cache-in-guest\n");
  });

  test("a command silent for 15 s → succeeds in the same VM", async () => {
    const startedAt = Date.now();
    expect(await agentRuns("sleep 15; echo quiet-done")).toBe("quiet-done\n");
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(15_000);
  });
});
