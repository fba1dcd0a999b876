// The kernel surfaces a shared-kernel sandbox must shut — socket families,
// setuid bits that land on host files, and inotify quotas shared between VMs. Each attack runs inside a
// real VM through the exec API while health must keep answering within 1 s.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { release } from "node:os";
import { join } from "node:path";
import { VM_INOTIFY_INSTANCES, VM_INOTIFY_WATCHES } from "../../runtime/local/inotify-limits";
import { eventually, makeActorFixture, type ActorFixture } from "../actors/fixture";
import { whileResponsive } from "./responsive";

let f: ActorFixture;
let repoA: string;
let repoB: string;

/** Guest-side scripts, written into each repository from the host. */
const SCRIPTS: Record<string, string> = {
  // socket(domain, type, 0) — or socketpair for a "p" prefix — by raw syscall: "ok" or the errno. Perl
  // passes a string argument as a pointer, hence the `0 +`.
  "sock.pl": `my ($socket, $pair) = ${process.arch === "arm64" ? "(198, 199)" : "(41, 53)"};
for my $d (@ARGV) { my ($p, $dom, $type) = $d =~ /^(p?)(.+):(\\d+)$/; my $sv = "\\0" x 8;
  my $r = $p ? syscall($pair, 0 + eval $dom, 0 + $type, 0, $sv) : syscall($socket, 0 + eval $dom, 0 + $type, 0);
  print "$d=", ($r >= 0 ? "ok" : $!+0), "\\n"; }`,
  // Opens inotify instances (or watches on files of its own) until the kernel refuses, reports, then holds them.
  "inotify-hold.pl": `$| = 1; my ($what, $max, $hold) = @ARGV; my $n = 0; my $err = 0;
my ($init1, $add) = ${process.arch === "arm64" ? "(26, 27)" : "(294, 254)"};
if ($what eq "instances") { for (1..$max) { my $fd = syscall($init1, 0); if ($fd < 0) { $err = $!+0; last } $n++ } }
else { mkdir "/tmp/w"; my $fd = syscall($init1, 0); die "init: $!" if $fd < 0;
  for my $i (1..$max) { my $p = "/tmp/w/$i"; open(my $h, ">", $p) or die "$p: $!"; close $h;
    if (syscall($add, $fd, $p, 2) < 0) { $err = $!+0; last } $n++ } }
print "$n $err\\n"; sleep 600 if $hold;`,
  // Every way to create a file with S_ISUID/S_ISGID (fchmodat2 apart): "<way>=<ok|errno>".
  "create-setuid.py": `import os, stat
os.umask(0)
def attempt(name, fn):
    try:
        fn(); print(name + "=ok")
    except OSError as e:
        print(name + "=" + str(e.errno))
attempt("openat-suid", lambda: os.close(os.open("s-openat", os.O_CREAT | os.O_WRONLY, 0o4755)))
attempt("openat-sgid", lambda: os.close(os.open("g-openat", os.O_CREAT | os.O_WRONLY, 0o2755)))
attempt("tmpfile-suid", lambda: os.close(os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o4755)))
attempt("mknod-suid", lambda: os.mknod("s-mknod", stat.S_IFREG | 0o4755))
attempt("mknod-sgid", lambda: os.mknod("g-mknod", stat.S_IFREG | 0o2755))
attempt("openat-plain", lambda: os.close(os.open("plain", os.O_CREAT | os.O_WRONLY, 0o755)))`,
  "raw-setuid.pl": `umask 0; my $how = pack("QQQ", 0101, 04755, 0);
my %nr = ${process.arch === "arm64" ? "(open => -1, creat => -1, mknod => -1, openat2 => 437)" : "(open => 2, creat => 85, mknod => 133, openat2 => 437)"};
sub try { my ($name, $nr, @args) = @_; return if $nr < 0; my $r = syscall($nr, @args); print "$name=", ($r >= 0 ? "ok" : $!+0), "\\n"; }
my ($a, $b, $c, $d) = ("s-open", "s-creat", "s-mknodraw", "s-openat2");
try("open-suid", $nr{open}, $a, 0101, 04755);
try("creat-suid", $nr{creat}, $b, 04755);
try("mknodraw-suid", $nr{mknod}, $c, 0100000 | 04755, 0);
try("openat2-suid", $nr{openat2}, -100, $d, $how, 24);`,
  // fchmodat2 (452, Linux 6.6+), which Debian 12's libseccomp cannot name.
  "fchmodat2.pl": `my $f = "f2"; open(my $h, ">", $f) or die; close $h;
for my $mode (04755, 02755, 0755) { my $r = syscall(452, -100, $f, $mode, 0); printf "%o=%s\\n", $mode, ($r >= 0 ? "ok" : $!+0); }`,
};

beforeAll(async () => {
  f = await makeActorFixture();
  repoA = f.makeRepo("alpha");
  repoB = f.makeRepo("beta");
  for (const repo of [repoA, repoB]) for (const [name, text] of Object.entries(SCRIPTS)) writeFileSync(join(repo, name), text);
  await f.client.sessions.register({ id: "ses_a", directory: repoA });
  await f.client.sessions.register({ id: "ses_b", directory: repoB });
}, 600_000);
afterAll(async () => f?.teardown(), 120_000);

const run = (id: string, command: string, cwd: string) => f.client.run(id, { command, cwd, timeoutMs: 60_000 });
/** `key=value` lines → object. */
const parse = (stdout: string) => Object.fromEntries(stdout.trim().split("\n").map((line) => line.split("=", 2) as [string, string]));
/** Host paths below `dir` (not .git) whose mode has a setuid or setgid bit. */
const setuidFiles = (dir: string) =>
  (readdirSync(dir, { recursive: true }) as string[]).filter((p) => !p.startsWith(".git") && (statSync(join(dir, p)).mode & 0o6000) !== 0);

const EPERM = "1";
const ENOSYS = "38";
const EAFNOSUPPORT = "97";

describe("socket families (issue 10, item 6)", () => {
  test("AF_VSOCK socket from the guest → EAFNOSUPPORT", async () => {
    const result = await whileResponsive(f, () => run("ses_a", "perl sock.pl 40:1 40:2 40:5", repoA));
    expect(parse(result.stdout)).toEqual({ "40:1": EAFNOSUPPORT, "40:2": EAFNOSUPPORT, "40:5": EAFNOSUPPORT });
  }, 120_000);

  test("AF_PACKET, AF_ALG, AF_KEY and every other family, also with upper bits set or by socketpair → EAFNOSUPPORT", async () => {
    const families = Array.from({ length: 64 }, (_, family) => family).filter((family) => ![1, 2, 10, 16].includes(family));
    const probes = [...families.map((family) => `${family}:2`), "17:3", "38:5", "15:3", "(1<<32)|40:1", "(1<<32)|1:1", "(1<<63)|2:2", "p30:5", "p40:1"];
    const result = await whileResponsive(f, () => run("ses_a", `perl sock.pl ${probes.map((p) => `'${p}'`).join(" ")}`, repoA));
    const outcome = parse(result.stdout);
    expect(Object.keys(outcome)).toEqual(probes);
    expect(Object.entries(outcome).filter(([, errno]) => errno !== EAFNOSUPPORT)).toEqual([]);
  }, 120_000);

  test("AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK from the guest → still work", async () => {
    const script = [
      "perl sock.pl 1:1 2:1 10:2 16:3 p1:1",
      // Real use of each: a TCP round trip on 127.0.0.1 and ::1, and iproute2 (netlink) listing lo.
      `python3 -c "import socket
for fam, host in ((socket.AF_INET, '127.0.0.1'), (socket.AF_INET6, '::1')):
    s = socket.socket(fam); s.bind((host, 0)); s.listen(); c = socket.create_connection(s.getsockname()[:2]); a, _ = s.accept(); c.sendall(b'x'); print(fam.name + '=' + a.recv(1).decode())"`,
      "ip -o link show lo | grep -q LOOPBACK && echo netlink=x",
    ].join("; ");
    const result = await whileResponsive(f, () => run("ses_a", script, repoA));
    expect(parse(result.stdout)).toEqual({ "1:1": "ok", "2:1": "ok", "10:2": "ok", "16:3": "ok", "p1:1": "ok", AF_INET: "x", AF_INET6: "x", netlink: "x" });
  }, 120_000);
});

describe("setuid bits on host files (issue 10, item 9)", () => {
  test("guest chmod u+s / g+s on a repository file → refused, host file has no setuid bit", async () => {
    // A setuid file made on the host: the guest writing to it clears the bit (no CAP_FSETID in the guest).
    writeFileSync(join(repoA, "host-suid"), "#!/bin/sh\n", { mode: 0o4755 });
    chmodSync(join(repoA, "host-suid"), 0o4755);
    const script = "cp /bin/true sh-copy && chmod 755 sh-copy; for m in u+s g+s 4755 2755 6755; do chmod $m sh-copy 2>/dev/null; echo $m=$?; done; echo : >> host-suid";
    const result = await whileResponsive(f, () => run("ses_a", script, repoA));
    expect(parse(result.stdout)).toEqual({ "u+s": "1", "g+s": "1", "4755": "1", "2755": "1", "6755": "1" });
    expect(statSync(join(repoA, "sh-copy")).mode & 0o7777).toBe(0o755);
    expect(statSync(join(repoA, "host-suid")).mode & 0o7777).toBe(0o755);
  }, 120_000);

  test("guest creates a setuid file with open(O_CREAT, 04755), O_TMPFILE, creat, mknod → refused, openat2 → ENOSYS", async () => {
    const result = await whileResponsive(f, () => run("ses_a", "python3 create-setuid.py; perl raw-setuid.pl", repoA));
    const expected: Record<string, string> = {
      "openat-suid": EPERM, "openat-sgid": EPERM, "tmpfile-suid": EPERM, "mknod-suid": EPERM, "mknod-sgid": EPERM, "openat-plain": "ok",
      ...(process.arch === "arm64" ? {} : { "open-suid": EPERM, "creat-suid": EPERM, "mknodraw-suid": EPERM }),
      "openat2-suid": ENOSYS,
    };
    expect(parse(result.stdout)).toEqual(expected);
    expect(setuidFiles(repoA)).toEqual([]);
  }, 120_000);

  test("guest fchmodat2 (syscall 452) with S_ISUID or S_ISGID → refused, host file has no setuid bit", async () => {
    const result = await whileResponsive(f, () => run("ses_a", "perl fchmodat2.pl", repoA));
    const [major = 0, minor = 0] = release().split(".").map(Number);
    // On Linux 6.6+ the call exists, so a plain mode succeeding shows the filter stops only the bits.
    const plain = major > 6 || (major === 6 && minor >= 6) ? "ok" : ENOSYS;
    expect(parse(result.stdout)).toEqual({ "4755": EPERM, "2755": EPERM, "755": plain });
    expect(statSync(join(repoA, "f2")).mode & 0o6000).toBe(0);
  }, 120_000);

  test("ordinary file work (cp -p, tar x, git checkout, chmod 755 and g+w, install -m 755, python/perl files) → still works", async () => {
    const script = [
      "set -e",
      "mkdir -p work/d && cd work && echo hi > a.txt && chmod 755 a.txt && chmod g+w a.txt && chmod 0644 a.txt",
      "cp -p a.txt b.txt && cp -rp d d2 && install -m 755 a.txt tool && install -d -m 755 dir",
      "tar cf /tmp/t.tar a.txt tool d && mkdir x && tar xpf /tmp/t.tar -C x",
      `python3 -c "import os; open('p.txt', 'w').write('x'); os.chmod('p.txt', 0o600)"`,
      `perl -e 'open(my $h, ">", "q.txt") or die; close $h; chmod(0755, "q.txt") or die'`,
      "cd .. && git add -A && git -c user.name=t -c user.email=t@example.com commit -qm one",
      "git checkout -q -b side && echo two > work/a.txt && git -c user.name=t -c user.email=t@example.com commit -qam two && git checkout -q -",
      "stat -c '%a %n' work/tool work/x/tool work/q.txt work/p.txt && cat work/a.txt",
    ].join("\n");
    const result = await whileResponsive(f, () => run("ses_a", script, repoA));
    expect(result).toMatchObject({ exitCode: 0, stderr: "" });
    expect(result.stdout).toBe("755 work/tool\n755 work/x/tool\n755 work/q.txt\n600 work/p.txt\nhi\n");
  }, 120_000);
});

describe("the filter does not depend on the host's libseccomp", () => {
  test("open_tree_attr (Linux 6.15, unknown to Debian 12's libseccomp) from the guest → EPERM", async () => {
    const [major = 0, minor = 0] = release().split(".").map(Number);
    // Without a filter rule it returns an O_PATH fd of "/" (no OPEN_TREE_CLONE needs no capability).
    const script = `perl -e 'my $p = "/"; my $r = syscall(467, -100, $p, 0, 0, 0); print $r >= 0 ? "ok" : $!+0'`;
    const result = await whileResponsive(f, () => run("ses_a", script, repoA));
    expect(result.stdout).toBe(major > 6 || (major === 6 && minor >= 15) ? EPERM : ENOSYS);
  }, 120_000);
});

describe("inotify shared between VMs (issue 10, item 7)", () => {
  /** Starts the holder in the background of `id`'s VM and waits for its report. */
  async function hold(id: string, repo: string, what: "instances" | "watches", max: number): Promise<string> {
    await run(id, `perl inotify-hold.pl ${what} ${max} hold < /dev/null > /tmp/hold-${what}.out 2>&1 & echo $! > /tmp/hold-${what}.pid`, repo);
    let report = "";
    await eventually(async () => (report = (await run(id, `cat /tmp/hold-${what}.out`, repo)).stdout).endsWith("\n"), 60_000);
    return report.trim();
  }
  const releaseHold = (id: string, repo: string, what: string) => run(id, `kill $(cat /tmp/hold-${what}.pid)`, repo);

  test("one VM opens 125+ inotify instances → another VM can still open its own", async () => {
    await whileResponsive(f, async () => {
      const vmA = (await run("ses_a", "true", repoA)).vmName;
      const vmB = (await run("ses_b", "true", repoB)).vmName;
      expect(vmA).not.toBe(vmB);
      // The attacker takes all it can and keeps it: its own VM's limit stops it (EMFILE), not the host's.
      expect(await hold("ses_a", repoA, "instances", 1000)).toBe(`${VM_INOTIFY_INSTANCES} 24`);
      const other = await run("ses_b", "perl inotify-hold.pl instances 1000", repoB);
      expect(other.stdout).toBe(`${VM_INOTIFY_INSTANCES} 24\n`);
      await releaseHold("ses_a", repoA, "instances");
    });
  }, 180_000);

  test("one VM adds 65536+ inotify watches → stopped at its own limit, another VM can still add watches", async () => {
    await whileResponsive(f, async () => {
      expect(await hold("ses_a", repoA, "watches", VM_INOTIFY_WATCHES + 10)).toBe(`${VM_INOTIFY_WATCHES} 28`);
      const other = await run("ses_b", "perl inotify-hold.pl watches 2000", repoB);
      expect(other.stdout).toBe("2000 0\n");
      await releaseHold("ses_a", repoA, "watches");
    });
  }, 180_000);

  test("the guest raises its own inotify limits → refused, the limits stay", async () => {
    const script = "for k in instances watches; do echo 99999999 > /proc/sys/user/max_inotify_$k 2>/dev/null; echo $k=$?; done; echo now=$(cat /proc/sys/user/max_inotify_instances),$(cat /proc/sys/user/max_inotify_watches)";
    const result = await whileResponsive(f, () => run("ses_a", script, repoA));
    expect(parse(result.stdout)).toEqual({ instances: "2", watches: "2", now: `${VM_INOTIFY_INSTANCES},${VM_INOTIFY_WATCHES}` });
  }, 120_000);
});
