// Pure parts of the local driver: mountinfo/cgroup layout parsing, guest root plan, OCI config, validation.
import { afterAll, describe, expect, test } from "bun:test";
import { chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RuntimeError, type VmSpec } from "../../runtime/driver";
import { layoutFromMounts, parseMountinfo } from "../../runtime/local/cgroup-layout";
import { planGuestRoot } from "../../runtime/local/guest-root";
import { buildOciConfig } from "../../runtime/local/oci-config";
import { seccompProfile } from "../../runtime/local/seccomp-profile";
import { validateSpec } from "../../runtime/local/validate-spec";
import { SpareDisks } from "../../runtime/local/disk-image";
import { processStartTime } from "../../runtime/proc-stat";

const CONTROLLERS = new Set(["cpu", "cpuacct", "memory", "pids", "freezer", "hugetlb"]);
const line = (id: number, mountPoint: string, fsType: string, superOptions: string, optional = "shared:1") =>
  `${id} 1 0:${id} / ${mountPoint} rw,nosuid ${optional} - ${fsType} ${fsType} ${superOptions}`;

const temp: string[] = [];
afterAll(() => temp.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

describe("mountinfo", () => {
  test("parse a line with optional fields and an escaped space → mount point, type, super options", () => {
    const [entry] = parseMountinfo(`36 35 98:0 /mnt1 /my\\040mount rw,noatime master:1 shared:2 - ext3 /dev/root rw,errors=continue\n`);
    expect(entry).toEqual({ mountPoint: "/my mount", fsType: "ext3", superOptions: ["rw", "errors=continue"] });
  });
});

describe("cgroup layout", () => {
  test("only cgroup2 at /sys/fs/cgroup → v2", () => {
    const layout = layoutFromMounts(parseMountinfo(line(30, "/sys/fs/cgroup", "cgroup2", "rw,nsdelegate")), CONTROLLERS);
    expect(layout).toEqual({ kind: "v2", unifiedRoot: "/sys/fs/cgroup" });
  });

  test("v1 hierarchies plus cgroup2 at unified → hybrid, keyed by sorted controllers", () => {
    const text = [
      line(30, "/sys/fs/cgroup/unified", "cgroup2", "rw,nsdelegate"),
      line(31, "/sys/fs/cgroup/systemd", "cgroup", "rw,xattr,name=systemd"),
      line(32, "/sys/fs/cgroup/cpu,cpuacct", "cgroup", "rw,cpuacct,cpu"),
      line(33, "/sys/fs/cgroup/memory", "cgroup", "rw,memory"),
    ].join("\n");
    const layout = layoutFromMounts(parseMountinfo(text), CONTROLLERS);
    expect(layout?.kind).toBe("hybrid");
    if (layout?.kind !== "hybrid") return;
    expect(layout.unifiedRoot).toBe("/sys/fs/cgroup/unified");
    expect([...layout.hierarchies]).toEqual([
      ["name=systemd", "/sys/fs/cgroup/systemd"],
      ["cpu,cpuacct", "/sys/fs/cgroup/cpu,cpuacct"],
      ["memory", "/sys/fs/cgroup/memory"],
    ]);
  });

  test("v1 hierarchies only → v1; no cgroup mount → undefined", () => {
    expect(layoutFromMounts(parseMountinfo(line(33, "/sys/fs/cgroup/memory", "cgroup", "rw,memory")), CONTROLLERS)?.kind).toBe("v1");
    expect(layoutFromMounts(parseMountinfo(line(20, "/", "ext4", "rw")), CONTROLLERS)).toBeUndefined();
  });
});

/** A tiny fake image: non-empty usr and etc, empty srv, merged-usr symlink bin. */
function fakeImage(): string {
  const image = mkdtempSync(join(tmpdir(), "ss-image-"));
  temp.push(image);
  for (const dir of ["usr/bin", "etc", "srv", "proc", "tmp", "home"]) mkdirSync(join(image, dir), { recursive: true });
  writeFileSync(join(image, "usr/bin/sh"), "");
  writeFileSync(join(image, "etc/hostname"), "sandbox\n");
  symlinkSync("usr/bin", join(image, "bin"));
  return image;
}

describe("guest root plan", () => {
  test("repo under a new top-level dir → plain dir with a mount point; image dirs bound; symlinks copied", () => {
    const plan = planGuestRoot(fakeImage(), ["/work/repo", "/srv/data", "/tmp/x"]);
    expect(plan.imageDirs.sort()).toEqual(["etc", "usr"]);
    expect(plan.plainDirs.sort()).toEqual(["home", "proc", "srv", "tmp", "work"]);
    expect(plan.symlinks).toEqual([["bin", "usr/bin"]]);
    expect(plan.mountPoints.sort()).toEqual(["/srv/data", "/work/repo"]);
  });

  test("mount inside a non-empty image dir, a reserved path or through a symlink → error", () => {
    const image = fakeImage();
    expect(() => planGuestRoot(image, ["/usr/local/repo"])).toThrow("read-only");
    for (const path of ["/proc/x", "/home/agent/x", "/tmp", "/"]) expect(() => planGuestRoot(image, [path])).toThrow("reserved");
    expect(() => planGuestRoot(image, ["/bin/x"])).toThrow("symlink");
  });
});

const baseSpec = (image: string, overrides: Partial<VmSpec> = {}): VmSpec => ({
  name: "unit-vm",
  image,
  cpus: 1.5,
  memoryMib: 512,
  mounts: [],
  tmpSizeMib: 128,
  volume: { name: "unit-vol" },
  labels: {},
  network: { mode: "none" },
  ...overrides,
});

describe("OCI config", () => {
  test("spec → user namespace in the VM's uid block, no caps, limits, /tmp size, repo idmapped to its owner", () => {
    const repo = mkdtempSync(join(tmpdir(), "ss-unit-repo-"));
    temp.push(repo);
    chownSync(repo, 1234, 1235);
    const config = buildOciConfig({
      spec: baseSpec("/img", { mounts: [{ hostPath: repo }] }),
      guestRoot: "/state/root",
      hostUidBase: 1 << 30,
      cgroupsPath: "/session-sandbox/x",
      pidsLimit: 321,
      initPath: "/usr/bin/tini-static",
      volumeData: "/state/vol",
      imageMounts: [],
    });
    expect(config.linux.namespaces.map((n) => n.type).sort()).toEqual(["cgroup", "ipc", "mount", "network", "pid", "user", "uts"]);
    expect(config.linux.uidMappings).toEqual([{ containerID: 0, hostID: 1 << 30, size: 65536 }]);
    expect(config.process.capabilities).toEqual({});
    expect(config.process.noNewPrivileges).toBe(true);
    expect(config.linux.resources.memory).toEqual({ limit: 512 << 20, swap: 512 << 20 });
    expect(config.linux.resources.cpu).toEqual({ quota: 150_000, period: 100_000 });
    expect(config.linux.resources.pids).toEqual({ limit: 321 });
    expect(config.mounts.find((m) => m.destination === "/tmp")?.options).toContain("size=128m");
    expect(config.mounts.find((m) => m.destination === repo)?.options).toContain(`idmap=uids=1234-${1 << 30}-1;gids=1235-${1 << 30}-1`);
    expect(config.root).toEqual({ path: "/state/root", readonly: true });
  });

  test("seccomp profile → nested user namespaces and mount/module/keyring syscalls denied", () => {
    const profile = seccompProfile();
    const rule = profile.syscalls.find((r) => r.names.includes("unshare"));
    expect(rule?.args?.[0]).toMatchObject({ index: 0, value: 0x10000000, op: "SCMP_CMP_MASKED_EQ" });
    expect(profile.syscalls.find((r) => r.names.includes("clone3"))?.errnoRet).toBe(38);
    const denied = profile.syscalls.flatMap((r) => (r.args ? [] : r.names));
    for (const name of ["mount", "finit_module", "keyctl", "bpf", "io_uring_setup"]) expect(denied).toContain(name);
  });
});

describe("spec validation", () => {
  const stateDir = mkdtempSync(join(tmpdir(), "ss-unit-state-"));
  temp.push(stateDir);
  const image = fakeImage();
  const reason = (spec: VmSpec) => {
    try {
      validateSpec(spec, stateDir);
      return "valid";
    } catch (error) {
      expect(error).toBeInstanceOf(RuntimeError);
      return (error as Error).message;
    }
  };

  test("valid spec → accepted", () => {
    expect(reason(baseSpec(image))).toBe("valid");
  });

  test("allowlist or open network without an egress proxy socket → refused (no other route out)", () => {
    expect(reason(baseSpec(image, { network: { mode: "allowlist", allow: ["example.org"] } }))).toContain("needs an egress proxy socket");
    expect(reason(baseSpec(image, { network: { mode: "all" } }))).toContain("needs an egress proxy socket");
    expect(reason(baseSpec(image, { network: { mode: "all" }, tierPart: { kind: "embedded", egressSocket: "relative/proxy.sock" } }))).toContain("needs an egress proxy socket");
  });

  test("bad names, resources, image or mounts → a reason naming the field", () => {
    expect(reason(baseSpec(image, { name: "../escape" }))).toContain("VM name");
    expect(reason(baseSpec(image, { volume: { name: "a/b" } }))).toContain("volume name");
    expect(reason(baseSpec(image, { memoryMib: 1 }))).toContain("memoryMib");
    expect(reason(baseSpec(image, { cpus: 0 }))).toContain("cpus");
    expect(reason(baseSpec("/nonexistent-image"))).toContain("build-rootfs.sh");
    expect(reason(baseSpec(image, { mounts: [{ hostPath: "relative/path" }] }))).toContain("absolute");
    expect(reason(baseSpec(image, { mounts: [{ hostPath: "/nonexistent-dir-xyz" }] }))).toContain("existing directory");
  });

  test("mount that contains or sits inside the state dir → refused", () => {
    expect(reason(baseSpec(image, { mounts: [{ hostPath: tmpdir() }] }))).toContain("state directory");
    mkdirSync(join(stateDir, "vms"), { recursive: true });
    expect(reason(baseSpec(image, { mounts: [{ hostPath: join(stateDir, "vms") }] }))).toContain("state directory");
  });
});

describe("seccomp profile (kernel surfaces)", () => {
  test("socket, socketpair → only AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK pass; every other family gets EAFNOSUPPORT", () => {
    const rules = seccompProfile().syscalls.filter((r) => r.names.includes("socket"));
    expect(rules.every((r) => r.names.join() === "socket,socketpair" && r.errnoRet === 97 && r.args?.length === 1 && r.args[0]!.index === 0)).toBe(true);
    const excluded = [0, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15];
    expect(rules.map((r) => `${r.args![0]!.op} ${r.args![0]!.value}`)).toEqual(["SCMP_CMP_GE 17", ...excluded.map((v) => `SCMP_CMP_EQ ${v}`)]);
  });

  test("setuid/setgid bits → refused by every call that sets a mode, for both bits; openat2 → ENOSYS; mkdir untouched", () => {
    const { syscalls } = seccompProfile();
    const denies = (name: string, conditions: [index: number, mask: number][]) =>
      syscalls.some((r) => r.names.includes(name) && r.errnoRet === 1 && conditions.every(([index, mask]) =>
        r.args?.some((a) => a.index === index && a.op === "SCMP_CMP_MASKED_EQ" && a.value === mask && a.valueTwo === mask)));
    for (const bit of [0o4000, 0o2000]) {
      for (const [name, index] of [["chmod", 1], ["fchmod", 1], ["creat", 1], ["mknod", 1], ["fchmodat", 2], ["fchmodat2", 2], ["mknodat", 2]] as const) {
        expect(denies(name, [[index, bit]])).toBe(true);
      }
      for (const flag of [0o100, 0o20000000]) {
        expect(denies("open", [[1, flag], [2, bit]])).toBe(true);
        expect(denies("openat", [[2, flag], [3, bit]])).toBe(true);
      }
    }
    expect(syscalls.find((r) => r.names.includes("openat2"))?.errnoRet).toBe(38);
    expect(syscalls.some((r) => r.names.includes("mkdir") || r.names.includes("mkdirat"))).toBe(false);
  });
});

describe("spare disks", () => {
  test("clean-up after a crash → removes a half-made spare whose maker is gone, keeps one a live process is still making", () => {
    const dir = mkdtempSync(join(tmpdir(), "ss-spares-"));
    try {
      const self = `${process.pid}-${processStartTime(process.pid)}`;
      writeFileSync(join(dir, `64.img.${self}-ab12.partial`), "");
      writeFileSync(join(dir, "64.img.999999999-1-cd34.partial"), "");
      writeFileSync(join(dir, "64.img.4242-ef56.partial"), ""); // an older name without a start time: its maker cannot be told
      expect(new SpareDisks(dir).removePartial().sort()).toEqual(["64.img.4242-ef56.partial", "64.img.999999999-1-cd34.partial"]);
      expect(readdirSync(dir)).toEqual([`64.img.${self}-ab12.partial`]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
