// End to end with a real `opencode serve` (npm opencode-ai 1.18.33), a scripted model on loopback, the
// real manager and the embedded runtime: the agent's bash tool, `!` shell mode and subagents run in the
// root session's VM; toggles move commands between the host and a fresh VM; deleting the session in
// OpenCode removes its VM and volume.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeTempDir } from "../helpers";
import { prepareLocalRuntime } from "../runtime/local-target";
import { createSession, eventually, makeProject, opencodeConfig, PLUGIN, pluginOptions, prompt, shellMode, startTestManager, toolParts, volumesOf, type TestManager } from "./fixture";
import { startMockLlm, type MockLlm } from "./mock-llm";
import { startOpencode, type OpencodeServer } from "./opencode-server";

// Per file: bun applies the preload's default only to the first file of a multi-file run.
setDefaultTimeout(120_000);

let root: string;
let project: string;
let manager: TestManager;
let llm: MockLlm;
let oc: OpencodeServer;
let outsideMarker: string;

beforeAll(async () => {
  const image = await prepareLocalRuntime();
  root = makeTempDir("ss-e2e-plugin-");
  project = makeProject(root, "repo");
  outsideMarker = join(root, "outside-marker");
  writeFileSync(outsideMarker, "host only\n");
  manager = await startTestManager(image);
  llm = startMockLlm();
  oc = await startOpencode({ root, projectDir: project, config: opencodeConfig(llm.url, [[PLUGIN, pluginOptions(root, manager)]]) });
}, 600_000);

afterAll(async () => {
  await oc?.stop();
  llm?.stop();
  await manager?.cleanUp();
  if (root) rmSync(root, { recursive: true, force: true });
}, 120_000);

describe("opencode plugin, sandboxed session", () => {
  let sessionID: string;
  let vmName: string;

  test("the model sees our bash tool (same arguments as the built-in) and the sandbox tool", async () => {
    sessionID = await createSession(oc);
    const parts = await prompt(oc, sessionID, "RUN:echo ready");
    expect(parts[0]?.state.status).toBe("completed");
    const offered = llm.requests.at(-1)?.tools ?? llm.requests.find((r) => r.tools)?.tools ?? [];
    const bash = offered.find((tool) => tool.function.name === "bash");
    expect(bash?.function.description).toContain("sandbox VM");
    expect(Object.keys((bash?.function.parameters as { properties: object }).properties).sort()).toEqual(["command", "timeout", "workdir"]);
    expect(offered.some((tool) => tool.function.name === "sandbox")).toBe(true);
  });

  test("agent bash call → runs in the VM: same repo path, outside marker invisible, no host processes, metadata names the provider", async () => {
    const command = `pwd; test -e ${outsideMarker} && echo OUTSIDE-VISIBLE || echo OUTSIDE-HIDDEN; echo vm-1 > /tmp/vm-id; ps -e -o comm=`;
    const [part] = await prompt(oc, sessionID, `RUN:${command}`);
    expect(part?.state.status).toBe("completed");
    const output = part!.state.output!;
    expect(output.split("\n")[0]).toBe(project);
    expect(output).toContain("OUTSIDE-HIDDEN");
    const processes = output.split("\n").slice(2).filter(Boolean);
    expect(processes.length).toBeLessThan(8); // tini, sh, ps: the guest's own
    expect(output).not.toMatch(/opencode|bun|systemd/);
    expect(part!.state.metadata).toMatchObject({ sandbox: true, sandboxProvider: "session-sandbox", exit: 0 });
    vmName = String(part!.state.metadata!.vmName);
    expect(vmName).toMatch(/^ocm-session-[0-9a-f]{12}$/);
    expect(existsSync("/tmp/vm-id") ? readFileSync("/tmp/vm-id", "utf8") : "").not.toBe("vm-1\n"); // the guest's /tmp is its own
  });

  test("`!` shell mode in the same session → runs through the shim in the same VM", async () => {
    const part = await shellMode(oc, sessionID, `cat /tmp/vm-id; test -e ${outsideMarker} && echo OUTSIDE-VISIBLE || echo OUTSIDE-HIDDEN`);
    expect(part.state.output).toBe("vm-1\nOUTSIDE-HIDDEN\n");
  });

  test("a command silent for 15 s → completes through the agent's bash tool and through `!` shell mode (the shim), in the VM", async () => {
    const [part] = await prompt(oc, sessionID, "RUN:sleep 15; cat /tmp/vm-id");
    expect(part?.state.status).toBe("completed");
    expect(part?.state.output).toBe("vm-1\n");
    expect(part?.state.metadata).toMatchObject({ sandbox: true, exit: 0, vmName });
    const shell = await shellMode(oc, sessionID, "sleep 15; cat /tmp/vm-id");
    expect(shell.state.output).toBe("vm-1\n");
  }, 120_000);

  test("a subagent's (child session's) command → runs in the root's VM", async () => {
    await prompt(oc, sessionID, "TASK:cat /tmp/vm-id");
    const children = await oc.call<Array<{ id: string; parentID: string }>>("GET", `/session/${sessionID}/children`);
    expect(children.length).toBe(1);
    const [childPart] = await toolParts(oc, children[0]!.id);
    expect(childPart?.state.output).toBe("vm-1\n");
    expect(childPart?.state.metadata).toMatchObject({ sandbox: true, sandboxProvider: "session-sandbox", vmName });
    expect(await manager.client.sessions.get(children[0]!.id)).toMatchObject({ parentID: sessionID, rootSessionID: sessionID });
  });

  test("the sandbox tool → reports the status", async () => {
    const [part] = await prompt(oc, sessionID, "SANDBOX_STATUS");
    expect(part?.tool).toBe("sandbox");
    expect(part?.state.output).toContain("sandboxed: true");
    expect(part?.state.output).toContain(vmName);
    expect(part?.state.output).toContain("provider session-sandbox: claims (default)");
    expect(part?.state.output).toContain("network: none (no network access)\nnetwork policy source: settings default\ndocker: off (only the user can turn it on)");
  });

  test("a server the agent starts in the VM → the sandbox tool forwards its port and answers a URL the user's browser (here fetch) opens", async () => {
    const [started] = await prompt(oc, sessionID, "RUN:mkdir -p /tmp/site && echo served-from-the-vm > /tmp/site/index.html && (cd /tmp/site && python3 -m http.server 8765 >/dev/null 2>&1 &) && sleep 1");
    expect(started?.state.status).toBe("completed");
    const [part] = await prompt(oc, sessionID, "SANDBOX_FORWARD:8765");
    expect(part?.tool).toBe("sandbox");
    const url = /http:\/\/127\.0\.0\.1:\d+\//.exec(part?.state.output ?? "")?.[0];
    expect(url).toBeDefined();
    expect(await (await fetch(url!)).text()).toBe("served-from-the-vm\n");
    await manager.client.ports.close(sessionID, 8765);
  });

  test("the sandbox tool's docker action → the manager's answer, here that the user has not turned Docker on", async () => {
    const [part] = await prompt(oc, sessionID, 'CALL:sandbox {"action":"docker"}');
    expect(part?.tool).toBe("sandbox");
    expect(part?.state.output).toBe(`Docker could not be started: docker is off for session ${sessionID}: turn it on for its root with PUT /api/session-sandbox/${sessionID} {"docker": true} (or \`session-sandbox docker ${sessionID} on\`), or the settings' docker default`);
  });

  test("toggle off through the SDK → the next command runs on the host; toggle on → a fresh VM", async () => {
    const hostMarker = join(root, "toggle-off-marker");
    await manager.client.sandbox.set(sessionID, { sandboxed: false });
    const [offPart] = await prompt(oc, sessionID, `RUN:touch ${hostMarker} && echo on-host`);
    expect(offPart?.state.metadata).toMatchObject({ sandbox: false, exit: 0 });
    expect(existsSync(hostMarker)).toBe(true);
    const offShell = await shellMode(oc, sessionID, `test -e ${outsideMarker} && echo OUTSIDE-VISIBLE`);
    expect(offShell.state.output).toBe("OUTSIDE-VISIBLE\n");

    await eventually(async () => !(await manager.client.vms.list()).vms.some((vm) => vm.name === vmName), 30_000);
    await manager.client.sandbox.set(sessionID, { sandboxed: true });
    const [onPart] = await prompt(oc, sessionID, "RUN:cat /tmp/vm-id 2>/dev/null || echo fresh-vm");
    expect(onPart?.state.output).toBe("fresh-vm\n");
    expect(onPart?.state.metadata).toMatchObject({ sandbox: true, sandboxProvider: "session-sandbox", vmName });
  });

  test("manager forgets a registered session (DELETE /api/sessions/:id) → the next bash call and `!` shell re-register it and run in a VM, never on the host", async () => {
    await manager.client.sessions.delete(sessionID);
    await eventually(async () => !(await manager.client.vms.list()).vms.some((vm) => vm.name === vmName), 30_000);
    const [part] = await prompt(oc, sessionID, `RUN:test -e ${outsideMarker} && echo OUTSIDE-VISIBLE || echo OUTSIDE-HIDDEN`);
    expect(part?.state.output).toBe("OUTSIDE-HIDDEN\n");
    expect(part?.state.metadata).toMatchObject({ sandbox: true, sandboxProvider: "session-sandbox", vmName });
    expect(await manager.client.sessions.get(sessionID)).toMatchObject({ id: sessionID });
    await manager.client.sessions.delete(sessionID);
    const shell = await shellMode(oc, sessionID, `test -e ${outsideMarker} && echo OUTSIDE-VISIBLE || echo OUTSIDE-HIDDEN`);
    expect(shell.state.output).toBe("OUTSIDE-HIDDEN\n");
  });

  test("deleting the session in OpenCode → its VM and volume are removed", async () => {
    expect((await manager.client.vms.list()).vms.some((vm) => vm.name === vmName)).toBe(true);
    expect(volumesOf(manager)).toContain(vmName);
    await oc.call("DELETE", `/session/${sessionID}`);
    await eventually(async () => !(await manager.client.vms.list()).vms.some((vm) => vm.name === vmName) && !volumesOf(manager).includes(vmName), 30_000);
    const gone = await manager.client.sessions.get(sessionID).catch((error: Error) => error);
    expect(gone).toBeInstanceOf(Error);
  });
});
