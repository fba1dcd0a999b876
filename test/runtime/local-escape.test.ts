// Escape attempts from inside a local VM: each one an assertion that the guest stays in its box.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { VmSpec } from "../../runtime/driver";
import { sh } from "./exec-capture";
import { expectNoLeaksAndCleanUp, makeLocalFixture, type LocalFixture } from "./local-target";

describe("local VM isolation", () => {
  let fixture: LocalFixture;
  const labels = { suite: `escape-${process.pid}` };
  const tempDirs: string[] = [];
  let repoA: string;
  let repoB: string;
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

  beforeAll(async () => {
    fixture = await makeLocalFixture();
    repoA = mkdtempSync(join(tmpdir(), "ss-repo-a-"));
    repoB = mkdtempSync(join(tmpdir(), "ss-repo-b-"));
    tempDirs.push(repoA, repoB);
    writeFileSync(join(repoA, "secret-a.txt"), "only for VM A");
    chownSync(repoB, owner.uid, owner.gid);
    process.env.SS_HOST_SECRET = "host-secret-value";
    await fixture.driver.create(spec(vmA, repoA));
    await fixture.driver.create(spec(vmB, repoB));
  }, 600_000);

  afterAll(async () => {
    delete process.env.SS_HOST_SECRET;
    for (const vm of (await fixture?.driver.list(labels)) ?? []) await fixture.driver.remove(vm.name);
    for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
    if (fixture) expectNoLeaksAndCleanUp(fixture);
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
    const result = await inB(`cat ${repoA}/secret-a.txt; grep -rs "only for VM A" / --exclude-dir=proc --exclude-dir=sys -l | head -1; echo end`);
    expect(result.stdout).toBe("end\n");
    expect(result.stderr).toContain("No such file");
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
    const result = await inB("ls /sys/class/net; awk 'NR>2{print $1}' /proc/net/dev");
    expect(result.stdout).toBe("lo\nlo:\n");
  });

  test("mount, nested user namespace, module load, kernel log → all refused", async () => {
    const result = await inB(`mount -t tmpfs none /mnt; echo "mount=$?"
      unshare -U true; echo "unshare-user=$?"
      unshare -r true; echo "unshare-root=$?"
      : > /tmp/x.ko; insmod /tmp/x.ko; echo "insmod=$?"
      dmesg >/dev/null; echo "dmesg=$?"`);
    for (const key of ["mount", "unshare-user", "unshare-root", "insmod", "dmesg"]) {
      expect(result.stdout).toMatch(new RegExp(`^${key}=[1-9]`, "m"));
    }
    expect(result.stderr).toContain("Operation not permitted");
  });

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
    const repo = mkdtempSync(join(tmpdir(), "ss-repo-ro-"));
    tempDirs.push(repo);
    const name = `esc-${process.pid}-ro`;
    await fixture.driver.create({ ...spec(name, repo), mounts: [{ hostPath: repo, readOnly: true }] });
    const result = await sh(fixture.driver, name, "touch x 2>&1; echo rc=$?", { cwd: repo });
    expect(result.stdout).toContain("Read-only file system");
    expect(existsSync(join(repo, "x"))).toBe(false);
  });
});
