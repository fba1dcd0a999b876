// The docker profile of a gVisor VM (VmSpec.docker; docs/docker.md): what a Docker Engine needs, granted
// inside gVisor's kernel (the Sentry) and nowhere else. The mounts, namespaces, bridges and cgroups a daemon
// makes are the Sentry's own objects; on the host the VM stays what every gVisor VM is: runsc's processes in
// the VM's cgroup and user namespace, behind runsc's own seccomp filter, with the same binds.
// - Capabilities: the guest's root keeps every capability (in the Sentry's user namespace of the VM).
// - No filter of ours: the container tier's seccomp filter (seccomp-exec.c) refuses exactly mount, unshare
//   and the namespaces a daemon needs; in this profile the Sentry answers them itself.
// - Netfilter: raw sockets in the Sentry's network stack (DOCKER_RUNSC_FLAGS), so iptables works there.
// - Cgroups: runsc's own cgroupfs (v1 controllers, in the Sentry) stays mounted at /sys/fs/cgroup, writable;
//   other gVisor VMs get none (gvisor-config.ts). The VM's limits stay on the host cgroup either way.
// - Where dockerd writes outside its data root, a small Sentry tmpfs: /etc/docker (its key.json); the
//   image's files stay read-only, and the rest it writes is under /run, the VM's own tmpfs.
// - The data root, /var/lib/docker, is a Sentry tmpfs bounded by the VM's disk quota: overlay2 needs a file
//   system the Sentry owns (on a directory bound from the host it fails: docs/isolation-tiers.md), so the
//   daemon's images and containers live in the VM's memory and go with the VM. It is bounded by half the
//   VM's memory too, so that a full data root answers ENOSPC rather than using up the memory the daemon
//   and its containers run in.
import { DEFAULT_DISK_MIB, type VmSpec } from "../driver";
import type { OciMount, OciProcess } from "../local/oci-config";
import { GUEST_DOCKER_DATA_ROOT } from "../guest-layout";


/**
 * `--net-raw`, at boot and at each exec (runsc exec drops CAP_NET_RAW from a process without it): raw
 * sockets in the Sentry's network stack, through which iptables programs gVisor's netfilter (the rules of
 * dockerd's embedded DNS in each container's namespace). The VM's stack has no host interface (`--network=none`): a raw
 * socket reaches only the VM's own interfaces.
 */
export const DOCKER_RUNSC_FLAGS = ["--net-raw"];

/** dockerd's configuration directory: it writes its key.json there. */
const DOCKER_CONFIG_DIR = "/etc/docker";

/** Every capability gVisor knows (Linux 5.9's set), granted to the guest's root in a docker VM only. */
const ALL_CAPABILITIES = [
  "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID",
  "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN",
  "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT",
  "CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE",
  "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL",
  "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND",
  "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
];

/** A guest process as runsc runs it in a docker VM: the guest's root with every capability. */
export type DockerProcess = Omit<OciProcess, "capabilities" | "noNewPrivileges"> & {
  capabilities: Record<"bounding" | "effective" | "permitted" | "inheritable" | "ambient", string[]>;
  noNewPrivileges: false;
};

/** The guest's root gets every capability; any other user none (the daemon's socket is root's). */
export function withDockerCapabilities(process: OciProcess): OciProcess | DockerProcess {
  if (process.user.uid !== 0) return process;
  const all = [...ALL_CAPABILITIES];
  return { ...process, capabilities: { bounding: all, effective: all, permitted: all, inheritable: all, ambient: all }, noNewPrivileges: false };
}

export function isDockerVm(spec: Pick<VmSpec, "docker">): boolean {
  return spec.docker === true;
}

/** The data root's size: the disk quota, or half the VM's memory where that is less. */
export function dockerDataMib(spec: Pick<VmSpec, "diskMib" | "memoryMib">): number {
  return Math.min(spec.diskMib ?? DEFAULT_DISK_MIB, Math.floor(spec.memoryMib / 2));
}

/**
 * The daemon's data root (a tmpfs of dockerDataMib) and its configuration directory (the image's own files
 * there are hidden: a daemon.json goes in ~/.docker, the helper passes it on).
 */
export function dockerMounts(spec: Pick<VmSpec, "diskMib" | "memoryMib">): OciMount[] {
  const tmpfs = (destination: string, options: string[]): OciMount => ({ destination, type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev", ...options] });
  return [tmpfs(GUEST_DOCKER_DATA_ROOT, ["mode=711", `size=${dockerDataMib(spec)}m`]), tmpfs(DOCKER_CONFIG_DIR, ["mode=755", "size=1m"])];
}
