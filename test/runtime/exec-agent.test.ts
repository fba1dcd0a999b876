// The exec agent (runtime/local/exec-agent.c, exec-agent-client.ts) as a hostile guest and an impatient
// user meet it, on the real local runtime: that commands really go through it; that they keep everything a
// `crun exec` gives them; that the guest has no path to the agent's socket and no host directory to write;
// that a guest which kills the agent still gets its commands run in the VM (through `crun exec`); and that
// an agent the guest has taken over (played here by a fake on the host, at the socket's path) gets nothing
// from the host: no connection followed through a link, no host process touched, no hang, no memory blow-up.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Socket } from "bun";
import { detectCgroupLayout } from "../../runtime/local/cgroup-layout";
import { listSubCgroups, processesIn } from "../../runtime/local/cgroup-tree";
import type { VmSpec } from "../../runtime/driver";
import { createLocalDriver } from "../../runtime/local/index";
import { eventually } from "../actors/fixture";
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

const u32 = (value: number) => {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32LE(value);
  return bytes;
};
const frame = (type: string, payload: Buffer) => Buffer.concat([Buffer.from(type), u32(payload.length), payload]);

/**
 * Plays an agent the guest has taken over: a server of the test's at the VM's agent socket (the real one
 * removed first), or at `name` beside it.
 */
function takeOver(vmName: string, onOpen: (socket: Socket<undefined>) => void, onData?: (socket: Socket<undefined>, data: Buffer) => void, name = "agent.sock") {
  const path = join(withAgent.stateDir, "vms", vmName, name);
  rmSync(path, { force: true });
  let connections = 0;
  const server = Bun.listen({
    unix: path,
    socket: {
      open: (socket) => {
        connections++;
        onOpen(socket);
      },
      data: (socket, data) => onData?.(socket, Buffer.from(data)),
    },
  });
  return { connections: () => connections, stop: () => server.stop(true) };
}

/** A process's command name, or undefined once it is gone (it may exit between a cgroup read and this). */
function commOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return undefined;
  }
}

/** The pid in the guest of the VM's process named `comm`, found from the host (its cgroup and NSpid); waits for it to start. */
async function guestPidOf(cgroupPath: string, comm: string): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    for (const pid of processesIn(detectCgroupLayout()!, cgroupPath)) {
      if (commOf(pid) !== comm) continue;
      const nspid = /^NSpid:\s*(.*)$/m.exec(procStatus(pid))?.[1]?.trim().split(/\s+/);
      if (nspid) return Number(nspid[nspid.length - 1]);
    }
    await Bun.sleep(10);
  }
  throw new Error(`no ${comm} in ${cgroupPath}`);
}

/** /proc/<pid>/status, or "" once the process is gone. */
function procStatus(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    return "";
  }
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

  test("ten commands at once in one VM, each through its own handler and sub-cgroup: all run, none mixes output; a timeout kills only its own", async () => {
    const vm = await withAgent.driver.create(spec(withAgent));
    // Command 3 would sleep 30 s, so its kill shows however late a loaded machine delivers it.
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => sh(withAgent.driver, vm.name, `sleep ${i === 3 ? 30 : 0.3}; echo out-${i}; echo err-${i} >&2; tr '\\0' '\\n' < /proc/$PPID/cmdline | head -1; grep -o 'exec-[0-9a-f]*' /proc/self/cgroup | head -1`, i === 3 ? { timeoutMs: 100 } : {})),
    );
    const subs = new Set<string>();
    results.forEach((result, i) => {
      if (i === 3) return expect(result).toMatchObject({ timedOut: true, stdout: "" });
      const [out, parent, sub] = result.stdout.split("\n");
      expect({ exitCode: result.exitCode, timedOut: result.timedOut, out, parent, stderr: result.stderr }).toEqual({ exitCode: 0, timedOut: false, out: `out-${i}`, parent: "/run/vm-exec-agent", stderr: `err-${i}\n` });
      expect(sub).toMatch(/^exec-[0-9a-f]+$/);
      subs.add(sub!);
    });
    expect(subs.size).toBe(9);
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

  test("the guest has no path to the agent's socket and no host directory it can write; PID 1 holds no listener", async () => {
    const vm = await withAgent.driver.create(spec(withAgent));
    const seen = await sh(withAgent.driver, vm.name, "test -e /run/sandbox-agent && echo dir; grep -c -e agent.sock -e sandbox-agent /proc/self/mountinfo; ls -l /proc/1/fd | grep -c socket; ls /run");
    expect(seen.stdout).toBe("0\n0\nvm-exec-agent\nvm-init\nvm-relay\n");
  });

  test("a state dir too deep for a socket path → the VM boots, its commands run through crun exec", async () => {
    const base = mkdtempSync(join(tmpdir(), "ss-agent-deep-"));
    const stateDir = join(base, "d".repeat(60), "state");
    mkdirSync(stateDir, { recursive: true, mode: 0o711 });
    for (const dir of [base, join(base, "d".repeat(60))]) chmodSync(dir, 0o711);
    const deep: LocalFixture = { driver: createLocalDriver({ stateDir, rootfsDir: withAgent.image, cgroupParent: `session-sandbox-test-${base.slice(-6)}` }), image: withAgent.image, stateDir, cgroupParent: `session-sandbox-test-${base.slice(-6)}` };
    try {
      const vm = await deep.driver.create(spec(deep));
      expect(Buffer.byteLength(join(stateDir, "vms", vm.name, "agent.sock"))).toBeGreaterThan(107);
      expect(await sh(deep.driver, vm.name, `echo ran; ${PARENT}`)).toMatchObject({ exitCode: 0, stdout: "ran\n" });
      await deep.driver.remove(vm.name);
    } finally {
      expectNoLeaksAndCleanUp(deep);
      rmSync(base, { recursive: true, force: true });
    }
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

  test("a command that kills its own handler → 137 with the reason on stderr, and nothing of it runs on", async () => {
    const vm = await withAgent.driver.create(spec(withAgent));
    const result = await sh(withAgent.driver, vm.name, "sleep 1000 & kill -9 $PPID; sleep 1001");
    expect(result).toMatchObject({ exitCode: 137, timedOut: false, cancelled: false, stdout: "" });
    expect(result.stderr).toContain("the exec agent's process running this command in the VM was killed before the command ended");
    const left = (await sh(withAgent.driver, vm.name, "ps -eo args")).stdout;
    expect(left).not.toContain("sleep 1000");
    expect(left).not.toContain("sleep 1001");
  });

  test("a guest that keeps killing the agent's processes → every command ends, never hangs: run to its end, or 137 with the reason; none runs twice", async () => {
    const vm = await withAgent.driver.create(spec(withAgent));
    await sh(withAgent.driver, vm.name, "(while :; do pkill -9 -x vm-exec-agent; done) >/dev/null 2>&1 &");
    for (let i = 0; i < 12; i++) {
      // Each run appends a line to a file: a command run twice (agent, then crun exec) would show two.
      const result = await sh(withAgent.driver, vm.name, `echo run >> /tmp/runs-${i}; echo ok-${i}; sleep 0.1; echo done-${i}`);
      if (result.exitCode === 0) expect(result.stdout).toBe(`ok-${i}\ndone-${i}\n`);
      else expect(result).toMatchObject({ exitCode: 137, stderr: expect.stringContaining("was killed before the command ended") });
      expect((await sh(withAgent.driver, vm.name, `cat /tmp/runs-${i} 2>/dev/null || true`)).stdout).toBeOneOf(["", "run\n"]);
    }
    await sh(withAgent.driver, vm.name, "pkill -9 -f 'pkill -9 -x'; true");
    expect((await sh(withAgent.driver, vm.name, "echo still-fine")).stdout).toBe("still-fine\n");
  }, 60_000);

  test("a guest that stops (SIGSTOP) the agent and its waiting handler → no command is held until its timeout: they run through crun exec; the next boot brings the agent back", async () => {
    const vm = await withAgent.driver.create(spec(withAgent));
    const layout = detectCgroupLayout()!;
    const path = withAgent.driver.cgroupPath(vm.name);
    const agentProcesses = () =>
      [path, ...listSubCgroups(layout, path).map((sub) => `${path}/${sub}`)]
        .flatMap((cgroup) => processesIn(layout, cgroup))
        .filter((pid) => commOf(pid) === "vm-exec-agent");
    // A process gone since the listing counts as not stopped: the poll looks again.
    const stopped = (pid: number) => /^State:\s+T/m.test(procStatus(pid));
    // Armed in the background, so that it stops the server and the handler placed for the next command.
    await sh(withAgent.driver, vm.name, "(sleep 0.3; pkill -STOP -x vm-exec-agent) >/dev/null 2>&1 &");
    await eventually(() => {
      const pids = agentProcesses();
      return pids.length >= 2 && pids.every(stopped);
    }, 10_000);
    for (let i = 0; i < 3; i++) {
      const result = await sh(withAgent.driver, vm.name, `echo ran-${i}; ${PARENT}`, { timeoutMs: 30_000 });
      expect(result).toMatchObject({ exitCode: 0, timedOut: false, stdout: `ran-${i}\n` });
    }
    await withAgent.driver.stop(vm.name);
    await withAgent.driver.start(vm.name);
    expect((await sh(withAgent.driver, vm.name, PARENT)).stdout).toStartWith("/run/vm-exec-agent ");
  }, 60_000);

  test("a taken-over agent reporting the VM's init or a pid that is not the VM's → nothing is moved, the command runs through crun exec", async () => {
    for (const reported of [1, 4_000_000]) {
      const vm = await withAgent.driver.create(spec(withAgent));
      const fake = takeOver(vm.name, (socket) => socket.write(frame("P", u32(reported))));
      try {
        const result = await sh(withAgent.driver, vm.name, `echo ran; ${PARENT}`);
        expect(result).toMatchObject({ exitCode: 0, stdout: "ran\n" });
        expect(fake.connections()).toBeGreaterThan(0);
        // PID 1 stayed in the VM's own cgroup: a later command's timeout (killing its sub-cgroup) leaves the VM up.
        expect((await sh(withAgent.driver, vm.name, "sleep 30", { timeoutMs: 300 })).timedOut).toBe(true);
        expect((await sh(withAgent.driver, vm.name, "grep -c exec- /proc/1/cgroup || true")).stdout).toBe("0\n");
      } finally {
        fake.stop();
      }
    }
  });

  test("a taken-over agent that sends a 4 GiB frame → a clear error; one that never answers → crun exec; a link or a FIFO at the socket's path → never followed, crun exec", async () => {
    const huge = await withAgent.driver.create(spec(withAgent));
    // It names a real process of the VM's own cgroup (its `sleep infinity`), so the host places it and sends the command.
    const sleepPid = await guestPidOf(withAgent.driver.cgroupPath(huge.name), "sleep");
    let received = 0;
    const hugeFake = takeOver(huge.name, (socket) => socket.write(frame("P", u32(sleepPid))), (socket, data) => {
      received += data.length;
      if (received > 1) socket.write(Buffer.from([0x4f, 0xf0, 0xff, 0xff, 0xff])); // 'O', 4294967280 bytes
    });
    try {
      await expect(sh(withAgent.driver, huge.name, "echo hi")).rejects.toThrow(/exec agent sent a frame of 4294967280 bytes/);
    } finally {
      hugeFake.stop();
    }

    const silent = await withAgent.driver.create(spec(withAgent));
    const silentFake = takeOver(silent.name, () => {});
    try {
      expect(await sh(withAgent.driver, silent.name, `echo ran; ${PARENT}`)).toMatchObject({ exitCode: 0, stdout: "ran\n" });
    } finally {
      silentFake.stop();
    }

    const linked = await withAgent.driver.create(spec(withAgent));
    const bait = takeOver(linked.name, () => {}, undefined, "bait.sock");
    const socketPath = join(withAgent.stateDir, "vms", linked.name, "agent.sock");
    try {
      rmSync(socketPath);
      symlinkSync(join(withAgent.stateDir, "vms", linked.name, "bait.sock"), socketPath);
      expect(await sh(withAgent.driver, linked.name, `hostname; ${PARENT}`)).toMatchObject({ exitCode: 0, stdout: `${linked.name}\n` });
      expect(bait.connections()).toBe(0);
      rmSync(socketPath);
      execFileSync("mkfifo", [socketPath]);
      expect(await sh(withAgent.driver, linked.name, "echo fifo")).toMatchObject({ exitCode: 0, stdout: "fifo\n" });
    } finally {
      bait.stop();
    }
  }, 60_000);
});
