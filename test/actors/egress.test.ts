// Egress over the real local runtime: the guest's only way out is its host-side proxy (Unix socket +
// in-VM forwarder on 127.0.0.1:3128). Targets are loopback servers on the host; nothing else is contacted.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { eventually, makeActorFixture, type ActorFixture } from "./fixture";

let f: ActorFixture;
let repo: string;
let server: ReturnType<typeof Bun.serve>;
beforeAll(async () => {
  f = await makeActorFixture();
  repo = f.makeRepo();
  server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("hello-from-host") });
  await f.client.sessions.register({ id: "ses_net", directory: repo });
}, 600_000);
afterAll(async () => {
  server?.stop(true);
  await f?.teardown();
}, 120_000);

/** curl through the VM's proxy explicitly (NO_PROXY would send 127.0.0.1 straight to the guest's own loopback). */
const viaProxy = (url: string) => `curl -s -S --max-time 10 --noproxy '' -x "$HTTP_PROXY" -D - -o /tmp/body ${url}; echo "exit=$?"; cat /tmp/body`;

describe("egress", () => {
  test("network none (default) → no proxy in the guest, no way out", async () => {
    const result = await f.client.run("ses_net", { command: `echo "proxy=[$HTTP_PROXY]"; curl -s --max-time 5 http://127.0.0.1:${server.port}/; echo "exit=$?"`, cwd: repo });
    expect(result.stdout).toContain("proxy=[]");
    expect(result.stdout).toContain("exit=7"); // connection refused: the guest's loopback is its own
  });

  test("network none → a command that failed on a name lookup ends its stderr with why and the command that allows the host; its stdout and exit code are its own; a success hears nothing", async () => {
    // No packet leaves: the VM has only its loopback, so the lookup fails inside it.
    const result = await f.client.run("ses_net", { command: "echo before; curl -sS --max-time 5 https://registry.example.invalid/pkg", cwd: repo });
    expect(result.exitCode).toBe(6); // curl: could not resolve host
    expect(result.stdout).toBe("before\n");
    expect(result.stderr).toBe('curl: (6) Could not resolve host: registry.example.invalid\nsession-sandbox: this VM has no network (its policy is "none"), so no name resolves in it; to let it reach registry.example.invalid: `session-sandbox network ses_net allow registry.example.invalid`\n');
    const fine = await f.client.run("ses_net", { command: "echo 'Could not resolve host: x.example' >&2", cwd: repo });
    expect(fine).toMatchObject({ exitCode: 0, stderr: "Could not resolve host: x.example\n" });
  });

  test("an allowed host → answers through the proxy", async () => {
    await f.client.sandbox.set("ses_net", { network: { mode: "allowlist", allow: ["loopback"] } });
    const result = await f.client.run("ses_net", { command: viaProxy(`http://127.0.0.1:${server.port}/`), cwd: repo });
    expect(result.stdout).toContain("HTTP/1.1 200");
    expect(result.stdout).toContain("hello-from-host");
    const tunnelled = await f.client.run("ses_net", { command: `curl -s --max-time 10 --noproxy '' -p -x "$HTTP_PROXY" http://127.0.0.1:${server.port}/`, cwd: repo });
    expect(tunnelled.stdout).toBe("hello-from-host"); // CONNECT tunnel
  });

  test("a denied host → 403 naming the rule", async () => {
    await f.client.sandbox.set("ses_net", { network: { mode: "allowlist", allow: ["api.github.com"] } });
    const result = await f.client.run("ses_net", { command: viaProxy(`http://127.0.0.1:${server.port}/`), cwd: repo });
    expect(result.stdout).toContain("HTTP/1.1 403");
    expect(result.stdout).toMatch(/x-sandbox-rule: block loopback/i);
    expect(result.stdout).toContain("denied");
    // The command's stderr ends with what was refused and why (the range's keyword is the fix).
    expect(result.stderr).toContain(`session-sandbox: the network policy refused 127.0.0.1:${server.port}: `);
    expect(result.stderr).toContain('add the keyword "loopback" (or "host") to network.allow to reach it\n');
  });

  test("names not in the allowlist → after the command's own output, its stderr names each once with the reason and the command that allows it; its stdout and exit code are the command's; the next command hears of nothing", async () => {
    await f.client.sandbox.set("ses_net", { network: { mode: "allowlist", allow: ["api.github.com", "*.githubusercontent.com"] } });
    // curl takes the proxy from the guest's environment, as npm, pip and git do: plain HTTP twice, then HTTPS (CONNECT).
    const command = "curl -fsS --max-time 10 http://registry.invalid/a; curl -fsS --max-time 10 http://registry.invalid/b; curl -fsS --max-time 10 https://files.invalid/; echo out; exit 3";
    const result = await f.client.run("ses_net", { command, cwd: repo });
    expect(result.exitCode).toBe(3);
    expect(result.stdout).toBe("out\n");
    const notes = result.stderr.split("\n").filter((line) => line.startsWith("session-sandbox: "));
    expect(notes).toEqual([
      `session-sandbox: the network policy refused registry.invalid:80: registry.invalid is not in the allowlist; add "registry.invalid" to network.allow (\`session-sandbox network ses_net allow api.github.com '*.githubusercontent.com' registry.invalid\`)`,
      `session-sandbox: the network policy refused files.invalid:443: files.invalid is not in the allowlist; add "files.invalid" to network.allow (\`session-sandbox network ses_net allow api.github.com '*.githubusercontent.com' files.invalid\`)`,
    ]);
    // After curl's own complaints, never before them.
    expect(result.stderr.endsWith(`${notes.join("\n")}\n`)).toBe(true);
    expect(result.stderr.indexOf("curl:")).toBeLessThan(result.stderr.indexOf("session-sandbox: "));
    const next = await f.client.run("ses_net", { command: "true", cwd: repo });
    expect(next.stderr).toBe("");
  });

  test("a direct connection that bypasses the proxy → fails", async () => {
    await f.client.sandbox.set("ses_net", { network: { mode: "all" } });
    const result = await f.client.run("ses_net", { command: `curl -s --max-time 5 --noproxy '*' http://127.0.0.1:${server.port}/; echo "exit=$?"; ip -o link | awk '{print $2}'`, cwd: repo });
    expect(result.stdout).toContain("exit=7");
    expect(result.stdout.trim().endsWith("lo:")).toBe(true); // loopback is the only interface
  });

  test("the VM's removal → its proxy stops and its socket goes", async () => {
    const vmName = (await f.client.sandbox.get("ses_net")).vmName;
    const socket = f.egress.socketPathFor(vmName);
    expect(existsSync(socket)).toBe(true);
    await f.client.sessions.delete("ses_net");
    await eventually(() => !f.egress.running().includes(vmName) && !existsSync(socket));
  });
});
