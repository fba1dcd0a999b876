// A guest that lies in wait in a repository: a background process in the VM that retries its writes at
// every moment (woken by inotify where the guest's view reports a change, and every 5 ms besides, since a
// FUSE view reports no change the host makes), before, during and after whatever the host does.
import { existsSync, readFileSync, statSync } from "node:fs";
import type { ExecRequest, RuntimeDriver } from "../../runtime/driver";

/** One write the attacker keeps trying: appended (`a`) or replaced (`w`), its parents made first if asked. */
export type AttackTarget = { path: string; content: string; mode?: "a" | "w"; parents?: boolean };

const PROGRAM = String.raw`
import ctypes, ctypes.util, json, os, select, sys, time
targets = json.loads(sys.argv[1])
libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
fd = libc.inotify_init1(os.O_NONBLOCK)
for t in targets:
    d = os.path.dirname(t["path"]) or "."
    while not os.path.isdir(d):
        d = os.path.dirname(d)
    libc.inotify_add_watch(fd, d.encode(), 0xfff)
wrote = set()
beats = 0
deadline = time.time() + 600
while time.time() < deadline and not os.path.exists("/tmp/attacker.stop"):
    for t in targets:
        try:
            if t.get("parents"):
                os.makedirs(os.path.dirname(t["path"]), exist_ok=True)
            with open(t["path"], t.get("mode", "a")) as f:
                f.write(t["content"])
                f.flush()
                # Only a write that landed in the file the name leads to counts (not one into a file the
                # host has just replaced or removed, which no name reaches any more).
                landed = os.fstat(f.fileno()).st_nlink > 0 and os.stat(t["path"]).st_ino == os.fstat(f.fileno()).st_ino
            if landed and t["path"] not in wrote:
                wrote.add(t["path"])
                with open("/tmp/attacker.log", "a") as log:
                    log.write("wrote " + t["path"] + "\n")
        except OSError:
            pass
    beats += 1
    with open("/tmp/attacker.beat.tmp", "w") as b:
        b.write(str(beats))
    os.rename("/tmp/attacker.beat.tmp", "/tmp/attacker.beat")
    select.select([fd], [], [], 0.005)
    try:
        os.read(fd, 65536)
    except OSError:
        pass
open("/tmp/attacker.done", "w").write("done")
`;

/** A command in the VM, its output collected as text (stdout and stderr apart). */
export async function runInVm(driver: RuntimeDriver, vm: string, request: ExecRequest): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const [out, err] = [new TextDecoder(), new TextDecoder()];
  const result = await driver.exec(vm, { timeoutMs: 60_000, ...request }, { stdout: (chunk) => (stdout += out.decode(chunk, { stream: true })), stderr: (chunk) => (stderr += err.decode(chunk, { stream: true })) });
  return { exitCode: result.exitCode, stdout, stderr };
}

async function guestText(driver: RuntimeDriver, vm: string, script: string, cwd: string): Promise<string> {
  return (await runInVm(driver, vm, { argv: ["bash", "-c", script], cwd })).stdout;
}

/**
 * The targets whose payload is in the host's file now: what the host would read. (What the attacker
 * itself reports can be a write into a file the host had just replaced: the guest's kernel caches names
 * and attributes for a second, so only the host's side is the truth.)
 */
export function landedOnHost(targets: AttackTarget[]): string[] {
  return targets.filter((target) => existsSync(target.path) && statSync(target.path).isFile() && readFileSync(target.path, "utf8").includes(target.content)).map((target) => target.path);
}

export type Attacker = {
  /** Waits until the attacker has gone round `rounds` more times (so it acted after what the host just did). */
  rounds(rounds: number): Promise<void>;
  /** Stops it; the paths it believes it wrote (see landedOnHost for what counts). */
  stop(): Promise<string[]>;
};

export async function startAttacker(driver: RuntimeDriver, vm: string, cwd: string, targets: AttackTarget[]): Promise<Attacker> {
  const program = Buffer.from(PROGRAM).toString("base64");
  const json = JSON.stringify(targets).replaceAll("'", "'\\''");
  await guestText(driver, vm, `rm -f /tmp/attacker.*; echo ${program} | base64 -d > /tmp/attacker.py && (setsid python3 /tmp/attacker.py '${json}' >/dev/null 2>&1 &)`, cwd);
  const attacker: Attacker = {
    // One command that waits in the guest, not a command every few milliseconds: each exec costs a VM's
    // runtime far more than the guest's own 20 ms sleep, and the attacker's pace is the same either way.
    async rounds(rounds) {
      const wait = `n=$(( $(cat /tmp/attacker.beat 2>/dev/null || echo 0) + ${rounds} )); end=$(( $(date +%s) + 60 ));
while [ "$(cat /tmp/attacker.beat 2>/dev/null || echo 0)" -lt "$n" ]; do [ "$(date +%s)" -gt "$end" ] && exit 3; sleep 0.02; done`;
      const result = await runInVm(driver, vm, { argv: ["sh", "-c", wait], cwd, timeoutMs: 90_000 });
      if (result.exitCode !== 0) throw new Error(`the attacker did not go round ${rounds} times within 60 s (${result.exitCode}: ${result.stderr.trim()})`);
    },
    async stop() {
      await guestText(driver, vm, "touch /tmp/attacker.stop; for i in $(seq 1 500); do [ -e /tmp/attacker.done ] && break; sleep 0.02; done", cwd);
      const log = await guestText(driver, vm, "cat /tmp/attacker.log 2>/dev/null", cwd);
      return log.split("\n").filter(Boolean).map((line) => line.replace(/^wrote /, ""));
    },
  };
  await attacker.rounds(2);
  return attacker;
}
