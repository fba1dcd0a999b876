// Escape attempts from inside a VM of an embedded tier (local = crun, gvisor = runsc), written once: each
// test is an assertion that the guest stays in its box. Where the tiers answer differently (gVisor has its
// own kernel: its own /proc status lines and no cgroup files), each asserts its own real answer and what
// makes it safe — nothing is skipped.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RuntimeError, type VmSpec } from "../../runtime/driver";
import { cgroupDirs, detectCgroupLayout } from "../../runtime/local/cgroup-layout";
import { sh } from "./exec-capture";
import type { LocalFixture } from "./local-target";

export type EscapeTarget = {
  /** "shared": guest system calls reach the host kernel (crun); "sentry": gVisor's user-space kernel serves them. */
  kernel: "shared" | "sentry";
  makeFixture(): Promise<LocalFixture>;
  /** Asserts nothing is left of the fixture's VMs and deletes it. */
  cleanUp(fixture: LocalFixture): void;
};

/** What only VM A's repository holds, and what only the host's token file holds. */
const SECRET_A = "only for VM A";
const HOST_TOKEN = "host-token-value";

/** Host processes of a VM: the members of its cgroup (crun: the guest's processes; runsc: the Sentry and the gofer). */
function hostProcessesOf(fixture: LocalFixture, name: string): number[] {
  const layout = detectCgroupLayout()!;
  const dir = cgroupDirs(layout, fixture.driver.cgroupPath(name)).find((d) => d.includes("/pids") || layout.kind === "v2")!;
  return readFileSync(`${dir}/cgroup.procs`, "utf8").split("\n").filter(Boolean).map(Number);
}

function statusField(pid: number, field: string): string {
  return new RegExp(`^${field}:\\s+(.*)$`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? "";
}

export function escapeSuite(tier: string, target: EscapeTarget): void {
  describe(`${tier} VM isolation`, () => {
    let fixture: LocalFixture;
    const labels = { suite: `escape-${tier}-${process.pid}` };
    const tempDirs: string[] = [];
    let repoA: string;
    let repoB: string;
    let hostToken: string;
    const vmA = `esc-${process.pid}-a`;
    const vmB = `esc-${process.pid}-b`;
    /** Host uid/gid that owns repo B, so guest writes must land with these ids. */
    const owner = { uid: 1234, gid: 1235 };

    const spec = (name: string, repo: string): VmSpec => ({
      name,
      image: fixture.image,
      cpus: 1,
      memoryMib: 256,
      mounts: [{ hostPath: repo }],
      tmpSizeMib: 32,
      volume: { name: `${name}-data` },
      labels,
      network: { mode: "none" },
    });
    const inB = (script: string) => sh(fixture.driver, vmB, script, { cwd: repoB });
    /**
     * The files in VM B holding `secret`, found by content anywhere in its filesystem. One scan looks for
     * every secret of the suite at once (-a: binary files too; a scan of the whole guest is slow, above all
     * through the gVisor tier's file server), and each test picks its own. Every file is listed (once per
     * secret it holds): a cut list could hide one secret's files behind the other's.
     */
    let scan: Promise<string[]> | undefined;
    const filesInBHolding = async (secret: string) => {
      scan ??= inB(`grep -rsaoH ${[SECRET_A, HOST_TOKEN].map((text) => `-e "${text}"`).join(" ")} / --exclude-dir=proc --exclude-dir=sys | sort -u`).then((r) => r.stdout.split("\n").filter(Boolean));
      return (await scan).filter((line) => line.endsWith(`:${secret}`)).map((line) => line.slice(0, -secret.length - 1));
    };
    const tempDir = (prefix: string) => {
      const dir = mkdtempSync(join(tmpdir(), prefix));
      tempDirs.push(dir);
      return dir;
    };

    beforeAll(async () => {
      fixture = await target.makeFixture();
      repoA = tempDir("ss-repo-a-");
      repoB = tempDir("ss-repo-b-");
      writeFileSync(join(repoA, "secret-a.txt"), SECRET_A);
      chownSync(repoB, owner.uid, owner.gid);
      // Stands for the manager's API token: a root-only file outside every mount.
      hostToken = join(tempDir("ss-host-data-"), "token");
      writeFileSync(hostToken, HOST_TOKEN, { mode: 0o600 });
      process.env.SS_HOST_SECRET = "host-secret-value";
      await fixture.driver.create(spec(vmA, repoA));
      await fixture.driver.create(spec(vmB, repoB));
    }, 600_000);

    afterAll(async () => {
      delete process.env.SS_HOST_SECRET;
      for (const vm of (await fixture?.driver.list(labels)) ?? []) await fixture.driver.remove(vm.name);
      for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
      if (fixture) target.cleanUp(fixture);
    }, 120_000);

    test("process list → only the VM's own processes, PID 1 is its init", async () => {
      const result = await inB("ps -eo pid=,comm=; echo; cat /proc/1/cmdline | tr '\\0' ' '");
      const [table = "", init = ""] = result.stdout.split("\n\n");
      const commands = table.trim().split("\n").map((l) => l.trim().split(/\s+/)[1]);
      expect(commands.length).toBeLessThan(8);
      expect(commands).not.toContain("bun");
      expect(init).toStartWith("/run/vm-init");
    });

    test("another VM's repository → not visible", async () => {
      const result = await inB(`cat ${repoA}/secret-a.txt; echo end`);
      expect(result.stdout).toBe("end\n");
      expect(result.stderr).toContain("No such file");
      expect(await filesInBHolding(SECRET_A)).toEqual([]);
    });

    test("the host's token file → not reachable by its path, its content nowhere", async () => {
      const result = await inB(`cat ${hostToken}; echo end`);
      expect(result.stdout).toBe("end\n");
      expect(result.stderr).toContain("No such file");
      expect(await filesInBHolding(HOST_TOKEN)).toEqual([]);
    });

    test("/root and host home directories → not the host's", async () => {
      const hostRoot = readdirSync("/root");
      expect(hostRoot.length).toBeGreaterThan(0);
      const result = await inB("ls -A /root 2>&1; ls -A /home");
      for (const entry of hostRoot) expect(result.stdout.split("\n")).not.toContain(entry);
      expect(result.stdout.trim().split("\n").at(-1)).toBe("agent");
    });

    test("the manager's state dir → absent inside the VM", async () => {
      const result = await inB(`ls ${fixture.stateDir} 2>&1; test -e ${fixture.stateDir} || echo absent`);
      expect(result.stdout).toContain("absent");
      expect(result.stdout).not.toContain("vms");
    });

    test("host environment → not inherited", async () => {
      const result = await inB("env");
      expect(result.stdout).not.toContain("host-secret-value");
    });

    test("TCP server on the host's loopback → unreachable", async () => {
      let accepted = 0;
      const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { open: () => void accepted++, data: () => {} } });
      try {
        const result = await inB(`curl -sS -m 3 http://127.0.0.1:${server.port}/; echo "curl=$?"; bash -c 'echo > /dev/tcp/127.0.0.1/${server.port}' 2>/dev/null; echo "tcp=$?"`);
        expect(result.stdout).toContain("curl=7"); // connection refused: the VM's own loopback has no server
        expect(result.stdout).toContain("tcp=1");
        expect(accepted).toBe(0);
      } finally {
        server.stop(true);
      }
    });

    test("network interfaces → loopback only", async () => {
      const result = await inB("ls /sys/class/net 2>/dev/null; awk 'NR>2{print $1}' /proc/net/dev");
      // gVisor 20240729's sysfs lists no interface at all; the kernel's own table is the one that counts.
      expect(["lo\nlo:\n", "lo:\n"]).toContain(result.stdout);
    });

    test("raw and packet sockets → refused", async () => {
      const result = await inB(`python3 -c "
import socket
for family, kind, proto in [(socket.AF_PACKET, socket.SOCK_RAW, 0x0300), (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)]:
    try:
        socket.socket(family, kind, proto); print('opened', family)
    except OSError as e:
        print('refused', family, e.errno)"`);
      // EPERM (no CAP_NET_RAW), or EAFNOSUPPORT where the seccomp filter hides the family (local: AF_PACKET).
      expect(result.stdout).toMatch(/^refused 17 (1|97)\nrefused 2 1\n$/);
    });

    test("ptrace → a host process (the manager) cannot even be found; nothing is traced", async () => {
      const result = await inB(`python3 -c "
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
print(libc.ptrace(16, ${process.pid}, 0, 0), ctypes.get_errno())"`);
      expect(result.stdout).toBe("-1 3\n"); // ESRCH: the manager's pid is not in the VM's pid namespace
      expect(statusField(process.pid, "TracerPid")).toBe("0");
    });

    test("mount, module load → refused", async () => {
      const result = await inB(`mount -t tmpfs none /tmp; echo "mount=$?"
        : > /tmp/x.ko; insmod /tmp/x.ko; echo "insmod=$?"`);
      for (const key of ["mount", "insmod"]) expect(result.stdout).toMatch(new RegExp(`^${key}=[1-9]`, "m"));
    });

    test("nested user namespace, kernel log → refused", async () => {
      const result = await inB(`unshare -U true; echo "unshare-user=$?"
        unshare -r true; echo "unshare-root=$?"
        dmesg >/dev/null; echo "dmesg=$?"`);
      for (const key of ["unshare-user", "unshare-root", "dmesg"]) expect(result.stdout).toMatch(new RegExp(`^${key}=[1-9]`, "m"));
      expect(result.stderr).toContain("Operation not permitted");
    });

    test("setuid and setgid bits in the repository → refused, the host file keeps none", async () => {
      const result = await inB("cp /bin/true suid; chmod 4755 suid; echo \"suid=$?\"; chmod g+s suid; echo \"sgid=$?\"; install -m 6755 /bin/true made-suid; echo \"install=$?\"");
      for (const key of ["suid", "sgid", "install"]) expect(result.stdout).toMatch(new RegExp(`^${key}=[1-9]`, "m"));
      for (const name of ["suid", "made-suid"]) {
        if (existsSync(join(repoB, name))) expect(statSync(join(repoB, name)).mode & 0o6000).toBe(0);
      }
    });

    if (target.kernel === "shared") {
      test("capabilities → none, no_new_privs set, seccomp filter active", async () => {
        const status = (await inB("grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status")).stdout;
        for (const cap of ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"]) expect(status).toMatch(new RegExp(`^${cap}:\\s+0{16}$`, "m"));
        expect(status).toMatch(/^NoNewPrivs:\s+1$/m);
        expect(status).toMatch(/^Seccomp:\s+2$/m);
      });

      test("cgroup hierarchies → read-only for the guest (no new cgroup, no limit change)", async () => {
        const script = `awk '{ for (i = 7; i <= NF; i++) if ($i == "-") { if ($(i+1) ~ /^cgroup2?$/) print $5; break } }' /proc/self/mountinfo | while read -r dir; do
            mkdir "$dir/escape" 2>/dev/null && echo "created in $dir"
            for f in pids.max memory.limit_in_bytes memory.max cpu.max cpu.cfs_quota_us; do
              [ -e "$dir/$f" ] && { echo max > "$dir/$f"; } 2>/dev/null && echo "wrote $dir/$f"
            done
            echo "checked $dir"
          done`;
        const result = await inB(script);
        expect(result.stdout).toContain("checked /sys/fs/cgroup/");
        expect(result.stdout).not.toContain("created");
        expect(result.stdout).not.toContain("wrote");
      });
    } else {
      test("capabilities → none, seccomp filter active in the guest (gVisor shows no NoNewPrivs or CapAmb line); on the host the VM's processes run unprivileged under seccomp", async () => {
        const status = (await inB("grep -E '^(CapInh|CapPrm|CapEff|CapBnd|Seccomp):' /proc/self/status; uname -r")).stdout;
        for (const cap of ["CapInh", "CapPrm", "CapEff", "CapBnd"]) expect(status).toMatch(new RegExp(`^${cap}:\\s+0{16}$`, "m"));
        expect(status).toMatch(/^Seccomp:\s+2$/m);
        expect(status).not.toContain(readFileSync("/proc/sys/kernel/osrelease", "utf8").trim()); // gVisor's kernel answers
        const processes = hostProcessesOf(fixture, vmB);
        expect(processes.length).toBeGreaterThanOrEqual(2); // the Sentry and the gofer
        for (const pid of processes) {
          expect(statusField(pid, "Seccomp")).toBe("2");
          expect(statusField(pid, "NoNewPrivs")).toBe("1");
          expect(statusField(pid, "Uid").split(/\s+/)).not.toContain("0");
        }
      });

      test("cgroups → none in the guest; the limits live on the host cgroup, out of its reach", async () => {
        const result = await inB(`awk '{ for (i = 7; i <= NF; i++) if ($i == "-") { print $(i+1); break } }' /proc/self/mountinfo | sort -u; ls /sys/fs/cgroup 2>&1 | head -1`);
        expect(result.stdout.split("\n")).not.toContain("cgroup");
        expect(result.stdout.split("\n")).not.toContain("cgroup2");
        const layout = detectCgroupLayout()!;
        const memory = cgroupDirs(layout, fixture.driver.cgroupPath(vmB)).find((d) => d.includes("/memory"));
        if (memory) expect(Number(readFileSync(`${memory}/memory.limit_in_bytes`, "utf8"))).toBe(256 * 1024 * 1024);
      });
    }

    test("writes outside the mounts → fail, or stay inside the VM", async () => {
      const marker = `escape-${process.pid}-${Date.now()}`;
      const result = await inB(`for p in /${marker} /usr/${marker} /etc/${marker} /var/${marker} /opt/${marker}; do touch $p 2>/dev/null && echo "wrote $p"; done
        touch /tmp/${marker} && echo tmp-ok; touch ~/${marker} && echo home-ok`);
      expect(result.stdout).toBe("tmp-ok\nhome-ok\n");
      for (const dir of ["/", "/usr", "/etc", "/var", "/opt", "/tmp", "/root", fixture.image]) expect(existsSync(join(dir, marker))).toBe(false);
    });

    test("files written in the repository → owned by the repository's host owner", async () => {
      const result = await inB("echo hi > from-guest.txt && mkdir from-guest-dir && stat -c '%u:%g' . from-guest.txt");
      expect(result.stdout).toBe("0:0\n0:0\n"); // the owner is the guest's root inside
      for (const name of ["from-guest.txt", "from-guest-dir"]) {
        const st = statSync(join(repoB, name));
        expect({ uid: st.uid, gid: st.gid }).toEqual(owner);
      }
    });

    test("repository mounted read-only → writes fail", async () => {
      const repo = tempDir("ss-repo-ro-");
      const name = `esc-${process.pid}-ro`;
      await fixture.driver.create({ ...spec(name, repo), mounts: [{ hostPath: repo, readOnly: true }] });
      const result = await sh(fixture.driver, name, "touch x 2>&1; echo rc=$?", { cwd: repo });
      expect(result.stdout).toContain("Read-only file system");
      expect(existsSync(join(repo, "x"))).toBe(false);
    });

    test("repository swapped for a symlink after it was pinned → the VM never starts on the other directory", async () => {
      const repo = tempDir("ss-repo-swap-");
      const { dev, ino } = statSync(repo);
      const elsewhere = tempDir("ss-elsewhere-");
      writeFileSync(join(elsewhere, "private.txt"), "not for the VM");
      renameSync(repo, `${repo}-moved`);
      tempDirs.push(`${repo}-moved`);
      symlinkSync(elsewhere, repo);
      const name = `esc-${process.pid}-swap`;
      const error = await fixture.driver.create({ ...spec(name, repo), mounts: [{ hostPath: repo, pin: { dev, ino } }] }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RuntimeError);
      expect((await fixture.driver.inspect(name))?.status).not.toBe("running");
      expect(readdirSync(elsewhere)).toEqual(["private.txt"]);
    });
  });
}
