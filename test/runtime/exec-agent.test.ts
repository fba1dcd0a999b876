// The exec agent (runtime/local/exec-agent.c, exec-agent-client.ts) as a hostile guest and an impatient
// user meet it, on the real local runtime: that commands really go through it; that they keep everything a
// `crun exec` gives them; and that a guest which kills it, swaps its socket for a link or a FIFO, or runs
// a fake agent in its place gets nothing from the host: no connection to a host socket, no host process
// touched, no hang, and its commands still run in the VM (through `crun exec`).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { VmSpec } from "../../runtime/driver";
import { createLocalDriver, type LocalDriver } from "../../runtime/local/index";
import { run, sh } from "./exec-capture";
import { expectNoLeaksAndCleanUp, makeLocalFixture, type LocalFixture } from "./local-target";

const runId = randomBytes(3).toString("hex");
let withAgent: LocalFixture;
let withoutAgent: LocalFixture;
let counter = 0;

const spec = (fixture: LocalFixture): VmSpec => {
  const name = `ea-${runId}-${++counter}`;
  return { name, image: fixture.image, cpus: 1, memoryMib: 256, mounts: [], tmpSizeMib: 32, volume: { name: `${name}-data` }, labels: { suite: `exec-agent-${runId}` }, network: { mode: "none" } };
};

/** The program that started the current command: the agent's handler (crun's is outside the VM: nothing). */
const PARENT = '{ tr "\\0" " " < /proc/$PPID/cmdline; } 2>/dev/null; true';
/** What the command runs with: credentials, seccomp, no_new_privs, capabilities, limits, session, stdin. */
const PROCESS_FACTS = `grep -E '^(Uid|Gid|Seccomp|NoNewPrivs|CapInh|CapPrm|CapEff|CapBnd|CapAmb):' /proc/self/status
grep -E '^Max (open files|processes)' /proc/self/limits
cat /proc/self/cgroup | sed 's/exec-[0-9a-f]*/exec-X/'
[ "$(cut -d' ' -f6 /proc/self/stat)" = "$$" ] && echo own-session
readlink /proc/self/fd/0
umask
env | sort`;

/** A fake agent in the guest (python3 in the image), listening where the real one did. */
function fakeAgent(behaviour: string): string {
  return `
import os, socket, struct, sys
path = "/run/sandbox-agent/agent.sock"
try: os.unlink(path)
except FileNotFoundError: pass
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path); s.listen(8)
if os.fork(): sys.exit(0)
os.setsid()
while True:
    c, _ = s.accept()
    ${behaviour}
`;
}

async function startFake(driver: LocalDriver, name: string, behaviour: string): Promise<void> {
  const started = await run(driver, name, { argv: ["python3", "-c", fakeAgent(behaviour)] });
  expect(started.exitCode).toBe(0);
}

beforeAll(async () => {
  withAgent = await makeLocalFixture();
  withoutAgent = await makeLocalFixture((options) => createLocalDriver({ ...options, execAgent: false }));
}, 600_000);

afterAll(async () => {
  for (const fixture of [withAgent, withoutAgent]) {
    if (!fixture) continue;
    for (const vm of await fixture.driver.list({ suite: `exec-agent-${runId}` })) await fixture.driver.remove(vm.name);
    expectNoLeaksAndCleanUp(fixture);
  }
}, 120_000);

describe("exec agent", () => {
  test("commands run through the agent; with it switched off, through crun exec", async () => {
    const a = await withAgent.driver.create(spec(withAgent));
    const b = await withoutAgent.driver.create(spec(withoutAgent));
    expect((await sh(withAgent.driver, a.name, PARENT)).stdout).toStartWith("/run/vm-exec-agent ");
    expect((await sh(withoutAgent.driver, b.name, PARENT)).stdout).not.toContain("vm-exec-agent");
  });

  test("a command through the agent runs exactly as under crun exec: ids, seccomp, no capabilities, limits, own cgroup, stdin, env; and a session of its own", async () => {
    const a = await withAgent.driver.create(spec(withAgent));
    const b = await withoutAgent.driver.create(spec(withoutAgent));
    const viaAgent = await sh(withAgent.driver, a.name, PROCESS_FACTS, { env: { GREETING: "hi there" }, cwd: "/tmp" });
    const viaCrun = await sh(withoutAgent.driver, b.name, PROCESS_FACTS, { env: { GREETING: "hi there" }, cwd: "/tmp" });
    expect(viaAgent.exitCode).toBe(0);
    expect(viaAgent.stdout).toContain("Seccomp:\t2");
    expect(viaAgent.stdout).toContain("NoNewPrivs:\t1");
    expect(viaAgent.stdout).toContain("CapEff:\t0000000000000000");
    expect(viaAgent.stdout).toContain("own-session");
    expect(viaAgent.stdout).toContain("/dev/null");
    expect(viaAgent.stdout).toContain("exec-X");
    expect(viaAgent.stdout).toContain("GREETING=hi there");
    expect(viaAgent.stdout).not.toContain("sandbox-agent");
    // One difference, on purpose: the agent makes each command a session leader (crun exec's command shares
    // crun's session, outside the VM), so a command's `kill 0` cannot reach the agent.
    expect(viaAgent.stdout.replace("own-session\n", "")).toBe(viaCrun.stdout);
  });

  test("argv and output byte for byte: 1 MiB of arguments in, 3 MiB out, nothing read from stdin", async () => {
    const vm = await withAgent.driver.create(spec(withAgent));
    const args = Array.from({ length: 10 }, (_, i) => String.fromCharCode(97 + i).repeat(100_000) + " ' \" $x \\ é");
    const counted = await run(withAgent.driver, vm.name, { argv: ["sh", "-c", 'n=0; for a; do n=$((n + $(printf %s "$a" | wc -c))); done; echo $n', "_", ...args] });
    expect(counted.stdout.trim()).toBe(String(args.reduce((n, a) => n + Buffer.byteLength(a), 0)));
    const big = await sh(withAgent.driver, vm.name, "cat; head -c 3145728 /dev/zero | tr '\\0' a; echo; echo done >&2");
    expect(big.exitCode).toBe(0);
    expect(big.stdout.length).toBe(3 * 1024 * 1024 + 1);
    expect(big.stderr).toBe("done\n");
  });

  test("a command silent for 11 s runs to its end: nothing between host and agent times out", async () => {
    const vm = await withAgent.driver.create(spec(withAgent));
    const result = await sh(withAgent.driver, vm.name, "tr '\\0' '\\n' < /proc/$PPID/cmdline | head -1; sleep 11; echo finished");
    expect(result).toMatchObject({ exitCode: 0, timedOut: false, stdout: "/run/vm-exec-agent\nfinished\n" });
  }, 60_000);

  test("missing program → 127; missing cwd → the reason, as crun exec says it; a signal → 128 + its number", async () => {
    const vm = await withAgent.driver.create(spec(withAgent));
    expect((await run(withAgent.driver, vm.name, { argv: ["no-such-program-xyz"] })).exitCode).toBe(127);
    expect((await run(withAgent.driver, vm.name, { argv: ["/no/such/path"] })).exitCode).toBe(127);
    await expect(run(withAgent.driver, vm.name, { argv: ["true"], cwd: "/no-such-dir" })).rejects.toThrow(/chdir to cwd \("\/no-such-dir"\).*No such file or directory/);
    expect((await sh(withAgent.driver, vm.name, "kill -TERM $$")).exitCode).toBe(143);
  });

  test("the guest swaps the agent's socket for a link to a host socket → the host never connects to it; the command runs in the VM", async () => {
    const vm = await withAgent.driver.create(spec(withAgent));
    const hostDir = mkdtempSync(join(tmpdir(), "ss-agent-bait-"));
    let connections = 0;
    const bait = Bun.listen({ unix: join(hostDir, "bait.sock"), socket: { open: () => void connections++, data() {} } });
    try {
      const swapped = await sh(withAgent.driver, vm.name, `rm /run/sandbox-agent/agent.sock && ln -s ${join(hostDir, "bait.sock")} /run/sandbox-agent/agent.sock`);
      expect(swapped.exitCode).toBe(0);
      const after = await sh(withAgent.driver, vm.name, `hostname; ${PARENT}`);
      expect(after.exitCode).toBe(0);
      expect(after.stdout).toStartWith(`${vm.name}\n`);
      expect(after.stdout).not.toContain("vm-exec-agent");
      expect(connections).toBe(0);
    } finally {
      bait.stop(true);
      rmSync(hostDir, { recursive: true, force: true });
    }
  });

  test("the guest puts a FIFO where the socket was → no hang, the command runs through crun exec", async () => {
    const vm = await withAgent.driver.create(spec(withAgent));
    expect((await sh(withAgent.driver, vm.name, "rm /run/sandbox-agent/agent.sock && mkfifo /run/sandbox-agent/agent.sock")).exitCode).toBe(0);
    expect(await sh(withAgent.driver, vm.name, "echo still here")).toMatchObject({ exitCode: 0, stdout: "still here\n" });
  });

  test("the guest kills the agent → its commands still run (crun exec), and the next boot brings the agent back", async () => {
    const vm = await withAgent.driver.create(spec(withAgent));
    // The agent's server is PID 1's child running vm-exec-agent; this command's own handler is its child.
    const killed = await sh(withAgent.driver, vm.name, "for p in $(ps -eo pid=,ppid=,args= | awk '$2 == 1 && $3 == \"/run/vm-exec-agent\" {print $1}'); do kill -9 $p && echo killed; done");
    expect(killed.stdout).toBe("killed\n");
    expect((await sh(withAgent.driver, vm.name, PARENT)).stdout).not.toContain("vm-exec-agent");
    await withAgent.driver.stop(vm.name);
    await withAgent.driver.start(vm.name);
    expect((await sh(withAgent.driver, vm.name, PARENT)).stdout).toStartWith("/run/vm-exec-agent ");
  });

  test("a fake agent reporting the VM's init (or a pid that is not the VM's) → nothing is moved, the command runs through crun exec", async () => {
    const vm = await withAgent.driver.create(spec(withAgent));
    await startFake(withAgent.driver, vm.name, `c.sendall(b"P" + struct.pack("<I", 4) + struct.pack("<I", 1)); c.recv(1 << 20); c.close()`);
    const first = await sh(withAgent.driver, vm.name, `echo ran; ${PARENT}`);
    expect(first.exitCode).toBe(0);
    expect(first.stdout).toStartWith("ran\n");
    expect(first.stdout).not.toContain("vm-exec-agent");
    // PID 1 stayed in the VM's own cgroup: a timeout of a later command (killing its sub-cgroup) leaves the VM up.
    expect((await sh(withAgent.driver, vm.name, "sleep 30", { timeoutMs: 300 })).timedOut).toBe(true);
    expect((await sh(withAgent.driver, vm.name, "cat /proc/1/cgroup | grep -c exec- || true")).stdout.trim()).toBe("0");

    await startFake(withAgent.driver, vm.name, `c.sendall(b"P" + struct.pack("<I", 4) + struct.pack("<I", 4_000_000)); c.recv(1 << 20); c.close()`);
    expect(await sh(withAgent.driver, vm.name, "echo again")).toMatchObject({ exitCode: 0, stdout: "again\n" });
  });

  test("a fake agent that takes the command then sends a 4 GiB frame → a clear error; one that never answers → the command runs through crun exec; the host never hangs", async () => {
    const vm = await withAgent.driver.create(spec(withAgent));
    // It names a real process of the VM's own cgroup (its `sleep infinity`), so the host moves it and says go.
    const sleepPid = 'next(int(p) for p in os.listdir("/proc") if p.isdigit() and open(f"/proc/{p}/stat").read().split()[1:4:2] == ["(sleep)", "1"])';
    await startFake(withAgent.driver, vm.name, `c.sendall(b"P" + struct.pack("<I", 4) + struct.pack("<I", ${sleepPid})); c.recv(1); c.recv(1 << 20); c.sendall(b"O" + struct.pack("<I", 0xFFFFFFF0)); c.close()`);
    await expect(sh(withAgent.driver, vm.name, "echo hi")).rejects.toThrow(/exec agent sent a frame of 4294967280 bytes/);

    // It accepts and keeps the connection, silent: the host gives up on it (nothing ran) and uses crun exec.
    await startFake(withAgent.driver, vm.name, `c.recv(1 << 20)`);
    expect(await sh(withAgent.driver, vm.name, `echo ran; ${PARENT}`)).toMatchObject({ exitCode: 0, stdout: "ran\n" });
  });
});
