// Turns a VmSpec into the OCI config.json crun runs: namespaces, uid mapping, mounts, limits, seccomp.
import { lstatSync, readFileSync } from "node:fs";
import { basename, dirname } from "node:path";
import { egressSocketOf, type BindMount, type VmSpec } from "../driver";
import { GUEST_HOME, GUEST_PATH, GUEST_RELAY } from "../guest-layout";
import { UIDS_PER_VM } from "./volumes";
import { seccompProfile, type SeccompProfile } from "./seccomp-profile";
import { SECCOMP_BPF_ANNOTATION } from "./seccomp-bpf";
import { vmSeccompProgramBase64 } from "./vm-seccomp";
import { vmInotifyHook, type OciHook } from "./inotify-limits";

/** Where the exec agent program is in every guest (on the VM's /run tmpfs, like its init), and its listener's fd (exec-agent-client.ts). */
const GUEST_EXEC_AGENT = "/run/vm-exec-agent";
const AGENT_LISTENER_FD = 3;

export type OciMount = { destination: string; type: string; source: string; options?: string[] };

export type OciProcess = {
  terminal: false;
  user: { uid: number; gid: number };
  args: string[];
  env: string[];
  cwd: string;
  capabilities: Record<string, never>;
  noNewPrivileges: true;
  rlimits: { type: string; hard: number; soft: number }[];
};

export type OciConfig = {
  ociVersion: string;
  root: { path: string; readonly: true };
  hostname: string;
  process: OciProcess;
  mounts: OciMount[];
  /** The seccomp program, compiled by us (seccomp-bpf.ts); crun then ignores `linux.seccomp`. */
  annotations: Record<string, string>;
  /** Sets the VM's own inotify limits (inotify-limits.ts): crun 1.8.1 refuses `user.*` sysctls. */
  hooks: { createContainer: OciHook[] };
  linux: {
    namespaces: { type: string }[];
    uidMappings: { containerID: number; hostID: number; size: number }[];
    gidMappings: { containerID: number; hostID: number; size: number }[];
    cgroupsPath: string;
    resources: {
      memory: { limit: number; swap: number };
      cpu: { quota: number; period: number };
      pids: { limit: number };
      devices: { allow: boolean; access: string }[];
    };
    seccomp: SeccompProfile;
    maskedPaths: string[];
    readonlyPaths: string[];
  };
};

/** tini is bind-mounted here (on the /run tmpfs) so the image needs no init of its own. */
const GUEST_INIT = "/run/vm-init";
const CPU_PERIOD_US = 100_000;

/** RLIMIT_NOFILE for guests: crun cannot raise it above the manager's own hard limit (EPERM). */
function nofileLimit(): number {
  try {
    const line = readFileSync("/proc/self/limits", "utf8").split("\n").find((l) => l.startsWith("Max open files"));
    const hard = Number(line?.split(/\s{2,}/)[2]);
    return Number.isFinite(hard) ? Math.min(hard, 65536) : 1024;
  } catch {
    return 1024;
  }
}

export function defaultEnv(): string[] {
  return [`PATH=${GUEST_PATH}`, `HOME=${GUEST_HOME}`, "LANG=C.UTF-8", "USER=root"];
}

export function guestProcess(args: string[], cwd: string, env: string[]): OciProcess {
  const nofile = nofileLimit();
  return {
    terminal: false,
    user: { uid: 0, gid: 0 },
    args,
    env,
    cwd,
    // Empty sets: the guest's root has no capability, in its own user namespace or anywhere else.
    capabilities: {},
    noNewPrivileges: true,
    rlimits: [{ type: "RLIMIT_NOFILE", hard: nofile, soft: nofile }],
  };
}

type ConfigInput = {
  spec: VmSpec;
  guestRoot: string;
  hostUidBase: number;
  cgroupsPath: string;
  pidsLimit: number;
  initPath: string;
  volumeData: string;
  imageMounts: OciMount[];
  /** The trust directory's mounts (trust-mounts.ts), after everything they land in. */
  trustMounts?: OciMount[];
  /** The exec agent to run beside init (exec-agent.c): its binary; its listener arrives as fd 3. */
  execAgent?: string;
  /** The VM relay (vm-relay.c), bound at GUEST_RELAY; absent (it could not be built): the image's socat forwards egress. */
  relay?: string;
  /** Where each guarded mount's repository view is mounted on the host (repo-fs/repo-views.ts); absent: none is guarded. */
  sources?: Map<BindMount, string>;
};

/**
 * crun 1.8.1 drops `nosuid`/`nodev` on read-write binds (mountinfo shows `rw,relatime`); its recursive
 * `rnosuid`/`rnodev` (mount_setattr) are applied, so both spellings are given. verify-mounts.ts checks
 * the result in the VM's mountinfo before any command runs.
 */
const NO_SUID_DEV = ["nosuid", "nodev", "rnosuid", "rnodev"];

/**
 * A host path shown so that its owner (uid and gid) is the guest's root, and guest writes land as that
 * owner. `bind`, not `rbind`: whatever the host mounted below a repository stays out of the VM.
 */
function sessionMount(mount: BindMount, hostUidBase: number, source: string): OciMount {
  const options = ["bind", mount.readOnly ? "ro" : "rw", ...NO_SUID_DEV];
  // A repository view reports the owner's files as the guest root's itself (FUSE has no id-mapped mounts
  // with this libfuse), and the guest's writes land as the owner through its daemon.
  if (mount.guard) return { destination: mount.hostPath, type: "bind", source, options };
  // crun 1.8.1 opens the target of an idmapped or recursive-flag (rnosuid) mount as a directory ("Not a
  // directory" for a file), so a file (read-only git metadata) is bound without either: the read-only
  // remount keeps nosuid,nodev, and the guest sees the file owned by nobody.
  if (mount.kind === "file") return { destination: mount.hostPath, type: "bind", source: mount.hostPath, options: ["bind", "ro", "nosuid", "nodev"] };
  const { uid, gid } = lstatSync(mount.hostPath);
  const idmap = `idmap=uids=${uid}-${hostUidBase}-1;gids=${gid}-${hostUidBase}-1`;
  return { destination: mount.hostPath, type: "bind", source: mount.hostPath, options: [...options, idmap] };
}

/** Where the egress proxy's socket directory appears in the guest, and the guest-side proxy port. */
const GUEST_EGRESS_DIR = "/run/sandbox-egress";
export const GUEST_PROXY_PORT = 3128;

/**
 * PID 1's command: tini (after the exec agent, when there is one). With egress, a forwarder (127.0.0.1:3128 →
 * the proxy's Unix socket) runs beside `sleep infinity` under tini, so it lives exactly as long as the VM and
 * is not any command's child: our relay, bound into the VM, so any image reaches out; the image's socat
 * only where the relay could not be built.
 */
function initCommand(spec: VmSpec, withAgent: boolean, relay: boolean): string[] {
  // With the agent, it runs first: it starts its server on the listener crun passed as fd 3, closes it, and
  // becomes tini. So no other process holds the listener, and a killed agent refuses connections at once.
  const agent = withAgent ? [GUEST_EXEC_AGENT, "--fd", String(AGENT_LISTENER_FD), "--"] : [];
  const egressSocket = egressSocketOf(spec);
  if (!egressSocket) return [...agent, GUEST_INIT, "-s", "--", "sleep", "infinity"];
  const socket = `${GUEST_EGRESS_DIR}/${basename(egressSocket)}`;
  const forwarder = relay
    ? `${GUEST_RELAY} listen ${GUEST_PROXY_PORT} ${socket}`
    : `socat TCP-LISTEN:${GUEST_PROXY_PORT},bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:${socket}`;
  return [...agent, GUEST_INIT, "-s", "--", "/bin/sh", "-c", `${forwarder} & exec sleep infinity`];
}

export function buildOciConfig(input: ConfigInput): OciConfig {
  const { spec, hostUidBase } = input;
  const tmpfs = (destination: string, options: string[]): OciMount => ({ destination, type: "tmpfs", source: "tmpfs", options });
  const memoryBytes = spec.memoryMib * 1024 * 1024;
  const mounts: OciMount[] = [
    { destination: "/proc", type: "proc", source: "proc", options: ["nosuid", "noexec", "nodev"] },
    tmpfs("/dev", ["nosuid", "strictatime", "mode=755", "size=65536k"]),
    { destination: "/dev/pts", type: "devpts", source: "devpts", options: ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"] },
    tmpfs("/dev/shm", ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]),
    { destination: "/dev/mqueue", type: "mqueue", source: "mqueue", options: ["nosuid", "noexec", "nodev"] },
    { destination: "/sys", type: "sysfs", source: "sysfs", options: ["nosuid", "noexec", "nodev", "ro"] },
    // Read-only view of the VM's own cgroup (cgroup namespace), so tools and tests can read its limits.
    { destination: "/sys/fs/cgroup", type: "cgroup", source: "cgroup", options: ["nosuid", "noexec", "nodev", "relatime", "ro"] },
    ...input.imageMounts,
    tmpfs("/tmp", ["nosuid", "nodev", "mode=1777", `size=${spec.tmpSizeMib}m`]),
    tmpfs("/run", ["nosuid", "nodev", "mode=755", "size=16m"]),
    tmpfs("/home", ["nosuid", "nodev", "mode=755", "size=1m"]),
    { destination: GUEST_HOME, type: "bind", source: input.volumeData, options: ["rbind", "rw", ...NO_SUID_DEV] },
    { destination: GUEST_INIT, type: "bind", source: input.initPath, options: ["bind", "ro", "nosuid", "nodev"] },
    // Only the socket's directory: the guest can connect to the proxy, and reach nothing else on the host.
    ...(egressSocketOf(spec) ? [{ destination: GUEST_EGRESS_DIR, type: "bind", source: dirname(egressSocketOf(spec)!), options: ["rbind", "rw", "nosuid", "nodev", "noexec"] }] : []),
    // The agent's program; its socket is not in the VM at all (crun passes the listener as fd 3).
    ...(input.execAgent ? [{ destination: GUEST_EXEC_AGENT, type: "bind", source: input.execAgent, options: ["bind", "ro", "nosuid", "nodev"] }] : []),
    ...(input.relay ? [{ destination: GUEST_RELAY, type: "bind", source: input.relay, options: ["bind", "ro", "nosuid", "nodev"] }] : []),
    // Sorted so a parent directory is mounted before a mount nested inside it.
    ...[...spec.mounts].sort((a, b) => a.hostPath.length - b.hostPath.length).map((m) => sessionMount(m, hostUidBase, input.sources?.get(m) ?? m.hostPath)),
    ...(input.trustMounts ?? []),
  ];
  const mapping = [{ containerID: 0, hostID: hostUidBase, size: UIDS_PER_VM }];
  return {
    ociVersion: "1.0.2",
    root: { path: input.guestRoot, readonly: true },
    hostname: spec.name,
    process: guestProcess(initCommand(spec, input.execAgent !== undefined, input.relay !== undefined), "/", defaultEnv()),
    mounts,
    annotations: { [SECCOMP_BPF_ANNOTATION]: vmSeccompProgramBase64() },
    hooks: { createContainer: [vmInotifyHook()] },
    linux: {
      namespaces: ["pid", "network", "ipc", "uts", "mount", "cgroup", "user"].map((type) => ({ type })),
      uidMappings: mapping,
      gidMappings: mapping,
      cgroupsPath: input.cgroupsPath,
      resources: {
        // swap == limit: no swap on top of the memory limit (v1 memsw, v2 memory.swap.max = 0).
        memory: { limit: memoryBytes, swap: memoryBytes },
        cpu: { quota: Math.round(spec.cpus * CPU_PERIOD_US), period: CPU_PERIOD_US },
        pids: { limit: input.pidsLimit },
        devices: [{ allow: false, access: "rwm" }],
      },
      seccomp: seccompProfile(),
      maskedPaths: [
        "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
        "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
      ],
      readonlyPaths: ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"],
    },
  };
}
