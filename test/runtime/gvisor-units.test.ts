// Pure parts of the gvisor tier: which guest processes an exec owns, and the config changes for runsc.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { dockerDataMib } from "../../runtime/gvisor/docker-profile";
import { GUEST_SECCOMP_EXEC, GUEST_SECCOMP_FILTER } from "../../runtime/gvisor/guest-binaries";
import { bootFlagsOf, guestProcessOf, gvisorConfig, hostMountsOf, HOST_TASKS_PER_GUEST_PROCESS, runscExecFlagsOf } from "../../runtime/gvisor/gvisor-config";
import { execTree, parseProcessTable, parseStatLines } from "../../runtime/gvisor/process-tree";
import { runscId } from "../../runtime/gvisor/runsc";
import { RUNSC_MIN_VERSION, runscTooOld, runscVersionDate } from "../../runtime/gvisor/runsc-version";
import { guestProcess, type OciConfig } from "../../runtime/local/oci-config";

const stat = (pid: number, comm: string, ppid: number, pgid: number, sid: number) => `${pid} (${comm}) S ${ppid} ${pgid} ${sid} 0 0 0`;

describe("gvisor exec tree", () => {
  test("parse → comm with spaces and parentheses does not shift the fields", () => {
    expect(parseStatLines(`${stat(7, "a b) (c", 3, 3, 3)}\ngarbage\n`)).toEqual([{ pid: 7, ppid: 3, pgid: 3, sid: 3 }]);
  });

  test("tree → children, setsid'd children, orphans of the group; never init or another exec", () => {
    const table = parseStatLines([
      stat(1, "vm-init", 0, 1, 1),
      stat(2, "sleep", 1, 1, 1), // init's own
      stat(10, "sh", 0, 10, 10), // another exec, with a background child
      stat(11, "sleep", 10, 10, 10),
      stat(20, "sh", 0, 20, 20), // this exec
      stat(21, "sleep", 20, 20, 20), // a child
      stat(22, "setsid", 20, 22, 22), // setsid'd, parent still the exec
      stat(23, "sleep", 22, 22, 22), // its child in the new session
      stat(24, "sleep", 1, 20, 20), // a double-forked orphan, re-parented to init
      stat(25, "daemon", 1, 25, 25), // a full daemon: left its session and orphaned (caught by its marker only)
    ].join("\n"));
    expect(execTree(table, 20).sort((a, b) => a - b)).toEqual([20, 21, 22, 23, 24]);
    const withMarker = table.map((p) => (p.pid === 25 ? { ...p, marked: true } : p));
    expect(execTree(withMarker, 20).sort((a, b) => a - b)).toEqual([20, 21, 22, 23, 24, 25]);
  });

  test("process table → stat lines with the marked ones flagged", () => {
    expect(parseProcessTable(`M ${stat(25, "daemon", 1, 25, 25)}\n- ${stat(1, "vm-init", 0, 1, 1)}\nnoise\n`)).toEqual([
      { pid: 25, ppid: 1, pgid: 25, sid: 25, marked: true },
      { pid: 1, ppid: 0, pgid: 1, sid: 1 },
    ]);
  });

  test("ids → none a prefix of another (runsc resolves ids by prefix)", () => {
    expect(runscId("ct-2").startsWith(runscId("ct-21"))).toBe(false);
    expect(runscId("ct-21").startsWith(runscId("ct-2"))).toBe(false);
  });
});

describe("gvisor config", () => {
  const config = {
    process: { args: ["/run/vm-init", "-s", "--", "sleep", "infinity"], env: ["PATH=/bin"] },
    annotations: { "run.oci.seccomp_bpf_data": "x" },
    hooks: { createContainer: [] },
    mounts: [
      { destination: "/usr", type: "bind", source: "/img/usr", options: ["rbind", "ro", "nosuid", "nodev", "idmap"] },
      { destination: "/home/agent", type: "bind", source: "/state/volumes/v/data", options: ["rbind", "rw", "nosuid", "nodev", "rnosuid", "rnodev"] },
      { destination: "/work/repo", type: "bind", source: "/work/repo", options: ["bind", "rw", "nosuid", "nodev", "rnosuid", "rnodev", "idmap=uids=1000-65536-1;gids=1001-65536-1"] },
      { destination: "/work/repo/.git/HEAD", type: "bind", source: "/work/repo/.git/HEAD", options: ["bind", "ro", "nosuid", "nodev"] },
    ],
    linux: { seccomp: {}, resources: { pids: { limit: 1024 } } },
  } as unknown as OciConfig;
  const spec = { mounts: [{ hostPath: "/work/repo" }, { hostPath: "/work/repo/.git/HEAD", kind: "file" as const, readOnly: true }] };
  const vm = { name: "vm1", id: "vm1", spec: spec as never, hostUidBase: 65536, cgroupPath: "/x", bundleDir: "/b", sources: new Map() };
  const binaries = { seccompExec: "/state/gvisor/seccomp-exec", seccompFilter: "/state/gvisor/seccomp.bpf" };
  const out = gvisorConfig(config, vm, { stateDir: "/state", binaries });

  test("idmapped and session mounts → prepared on the host with crun's id maps, bound from the state dir", () => {
    expect(hostMountsOf(out)).toEqual([
      { source: "/img/usr", target: "/state/gvisor-mounts/vm1/image-0", kind: "dir", readOnly: true, recursive: true, uidMap: "0 65536 65536", gidMap: "0 65536 65536" },
      { source: "/work/repo", target: "/state/gvisor-mounts/vm1/mount-2", kind: "dir", readOnly: false, recursive: false, uidMap: "1000 65536 1", gidMap: "1001 65536 1" },
      { source: "/work/repo/.git/HEAD", target: "/state/gvisor-mounts/vm1/mount-3", kind: "file", readOnly: true, recursive: false, uidMap: undefined, gidMap: undefined },
    ]);
    expect(out.mounts.map((m) => [m.destination, m.source])).toContainEqual(["/work/repo", "/state/gvisor-mounts/vm1/mount-2"]);
    expect(out.mounts.flatMap((m) => m.options ?? []).filter((o) => o.startsWith("idmap") || o.startsWith("rnos") || o.startsWith("rnod"))).toEqual([]);
  });

  test("init started through seccomp-exec, OCI seccomp and hooks dropped, nothing preloaded, host pids scaled", () => {
    expect(out.process.args).toEqual([GUEST_SECCOMP_EXEC, GUEST_SECCOMP_FILTER, "/run/vm-init", "-s", "--", "sleep", "infinity"]);
    expect(out.linux.seccomp).toBeUndefined();
    expect(out.hooks).toBeUndefined();
    expect(out.annotations["run.oci.seccomp_bpf_data"]).toBeUndefined();
    expect(out.mounts.slice(-2)).toEqual([
      { destination: GUEST_SECCOMP_EXEC, type: "bind", source: "/state/gvisor/seccomp-exec", options: ["bind", "ro"] },
      { destination: GUEST_SECCOMP_FILTER, type: "bind", source: "/state/gvisor/seccomp.bpf", options: ["bind", "ro"] },
    ]);
    expect(out.process.env.filter((kv) => kv.startsWith("LD_PRELOAD="))).toEqual([]);
    expect(out.linux.resources.pids.limit).toBe(1024 * HOST_TASKS_PER_GUEST_PROCESS);
  });

  test("a VM without docker → no cgroup file system, guest processes under the filter without capabilities, no runsc flag", () => {
    const withCgroup = { ...config, mounts: [...config.mounts, { destination: "/sys/fs/cgroup", type: "cgroup", source: "cgroup", options: ["ro"] }] };
    const plain = gvisorConfig(withCgroup, vm, { stateDir: "/state", binaries });
    expect(plain.mounts.filter((m) => m.type === "cgroup" || m.type === "tmpfs")).toEqual([]);
    expect(bootFlagsOf(plain)).toEqual([]);
    expect(runscExecFlagsOf(vm.spec)).toEqual([]);
    const command = guestProcessOf(vm.spec, guestProcess(["sh", "-c", "true"], "/", []));
    expect(command.args).toEqual([GUEST_SECCOMP_EXEC, GUEST_SECCOMP_FILTER, "sh", "-c", "true"]);
    expect(command.capabilities).toEqual({});
    expect(command.noNewPrivileges).toBe(true);
  });

  test("a docker VM → runsc's cgroupfs kept, a data root as large as the disk quota and /etc/docker on tmpfs, raw sockets at boot and exec, commands with capabilities and no filter of ours", () => {
    const dockerVm = { ...vm, spec: { ...spec, docker: true, diskMib: 512, memoryMib: 2048 } as never };
    const withCgroup = { ...config, mounts: [...config.mounts, { destination: "/sys/fs/cgroup", type: "cgroup", source: "cgroup", options: ["ro"] }] };
    const docker = gvisorConfig(withCgroup, dockerVm, { stateDir: "/state", binaries });
    expect(docker.mounts.filter((m) => m.type === "cgroup").map((m) => m.destination)).toEqual(["/sys/fs/cgroup"]);
    expect(docker.mounts.filter((m) => m.type === "tmpfs")).toEqual([
      { destination: "/var/lib/docker", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev", "mode=711", "size=512m"] },
      { destination: "/etc/docker", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev", "mode=755", "size=1m"] },
    ]);
    // The image stays read-only (no overlay flag); the init keeps the filter (it never needs the daemon's rights).
    expect(docker.mounts.find((m) => m.destination === "/usr")?.options).toContain("ro");
    expect(docker.process.args.slice(0, 2)).toEqual([GUEST_SECCOMP_EXEC, GUEST_SECCOMP_FILTER]);
    expect(bootFlagsOf(docker)).toEqual(["--net-raw"]);
    expect(runscExecFlagsOf(dockerVm.spec)).toEqual(["--net-raw"]);
    const command = guestProcessOf(dockerVm.spec, guestProcess(["sh", "-c", "true"], "/", []));
    expect(command.args).toEqual(["sh", "-c", "true"]);
    expect(command.noNewPrivileges).toBe(false);
    const capabilities = command.capabilities as Record<string, string[]>;
    expect(capabilities.effective).toContain("CAP_SYS_ADMIN");
    expect(capabilities.effective).toContain("CAP_NET_ADMIN");
    expect(new Set(Object.values(capabilities).map((set) => set.length))).toEqual(new Set([41]));
    // The data root lives in memory: half of it where that is less than the quota.
    expect(dockerDataMib({ diskMib: 512, memoryMib: 2048 })).toBe(512);
    // Another guest user runs without our filter too, but without any capability.
    const asUser = guestProcessOf(dockerVm.spec, { ...guestProcess(["id"], "/", []), user: { uid: 1000, gid: 1000 } });
    expect(asUser.args).toEqual(["id"]);
    expect(asUser.capabilities).toEqual({});
    expect(dockerDataMib({ diskMib: 4096, memoryMib: 2048 })).toBe(1024);
  });
});

describe("runsc version", () => {
  test("the tier's minimum → accepted, newer and undated builds too; bookworm's 20221219 → refused with why", () => {
    expect(runscVersionDate("0.0~20240729.0")).toBe(20240729);
    expect(runscTooOld("0.0~20240729.0")).toBeUndefined();
    expect(runscTooOld("release-20250101.0")).toBeUndefined(); // no ~date: not Debian's numbering, taken as new
    expect(runscTooOld("0.0~20250512.0")).toBeUndefined();
    expect(runscTooOld("0.0~20221219.0")).toContain("older than 0.0~20240729");
  });

  test("the install script's minimum runsc → the one the tier's probe asks for (two languages, one number)", () => {
    const script = readFileSync(new URL("../../scripts/lib/runsc-install.sh", import.meta.url), "utf8");
    expect(Number(/^RUNSC_MIN_VERSION=(\d{8})$/m.exec(script)?.[1])).toBe(runscVersionDate(RUNSC_MIN_VERSION)!);
  });
});
