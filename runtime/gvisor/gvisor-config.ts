// The local driver's OCI config, changed only where runsc needs it (found on 0.0~20221219; still so on
// 0.0~20240729 unless said): the same mounts, limits, user namespace and init. What changes, and why:
// - idmapped mounts (image directories, repositories) and every session mount's flags: runsc rejects the
//   `idmap` option and applies no flags to binds, so these become host mounts prepared before each boot
//   (host-mounts.ts), carried here as an annotation and bound from under the state dir;
// - seccomp: runsc applies an OCI filter only to the container's init, never to `runsc exec` processes, so
//   `linux.seccomp` is dropped and every guest process (init and each command) starts through
//   seccomp-exec.c, which installs the local tier's filter (compiled by seccomp-bpf.ts) and then runs it —
//   under gVisor's Sentry, which checks the filter before it serves a call;
// - the inotify hook: gVisor implements inotify itself, with its own limits;
// - seccomp-exec and the filter are bound read-only;
// - the cgroup mount is left out (the guest gets no cgroup file system, as on 20221219);
// - a docker VM (VmSpec.docker) keeps runsc's cgroupfs and gets its daemon's mounts and flags
//   (docker-profile.ts); its commands run with capabilities and without the filter;
// - pids: with the ptrace platform each guest process costs the host a stub process and its threads, so
//   the host cgroup's limit is scaled to keep the guest's process budget near the local tier's.
import { join } from "node:path";
import type { VmSpec } from "../driver";
import type { OciConfig, OciMount, OciProcess } from "../local/oci-config";
import type { RuntimeConfig, RuntimeVm } from "../local/oci-runtime";
import { UIDS_PER_VM } from "../local/volumes";
import type { HostMount } from "./host-mounts";
import { GUEST_SECCOMP_EXEC, GUEST_SECCOMP_FILTER, type GuestBinaries } from "./guest-binaries";
import { DOCKER_RUNSC_FLAGS, dockerMounts, isDockerVm, withDockerCapabilities, type DockerProcess } from "./docker-profile";

/** Where host-mounts.ts finds what to attach: the annotation holds the HostMount list as JSON. */
const HOST_MOUNTS_ANNOTATION = "dev.session-sandbox.host-mounts";
/** Present when the VM's writes stay in its memory (VmSpec.scratchWrites): the runsc flag its boot adds. */
const SCRATCH_WRITES_ANNOTATION = "dev.session-sandbox.scratch-writes";
const SCRATCH_WRITES_FLAG = "--overlay2=all:memory";
/** Present on a docker VM: its boot adds the profile's runsc flags (docker-profile.ts). */
const DOCKER_ANNOTATION = "dev.session-sandbox.docker";
/**
 * Host tasks per guest process under the ptrace platform (each guest process costs several host pids): the
 * pids limit is scaled by it.
 * Exported so a test checks the pids limit.
 */
export const HOST_TASKS_PER_GUEST_PROCESS = 4;

/** The host directory of a VM's prepared mounts. */
export function hostMountsDir(stateDir: string, name: string): string {
  return join(stateDir, "gvisor-mounts", name);
}

const withoutIdmapAndRecursiveFlags = (options: string[] = []) =>
  options.filter((o) => !o.startsWith("idmap") && o !== "rnosuid" && o !== "rnodev");

function sessionMountFor(spec: VmSpec, destination: string) {
  return spec.mounts.find((m) => m.hostPath === destination);
}

/** A guest command as runsc is given it: started through seccomp-exec, so the VM's filter is on before it runs. */
export function filteredArgv(argv: string[]): string[] {
  return [GUEST_SECCOMP_EXEC, GUEST_SECCOMP_FILTER, ...argv];
}

/**
 * A guest process of this VM as runsc is given it: under the VM's filter, or, in a docker VM, without it and,
 * when it runs as the guest's root, with root's capabilities (docker-profile.ts); another user gets none.
 */
export function guestProcessOf(spec: Pick<VmSpec, "docker">, process: OciProcess): OciProcess | DockerProcess {
  return isDockerVm(spec) ? withDockerCapabilities(process) : { ...process, args: filteredArgv(process.args) };
}

export function gvisorConfig(config: OciConfig, vm: RuntimeVm, input: { stateDir: string; binaries: GuestBinaries }): RuntimeConfig {
  const dir = hostMountsDir(input.stateDir, vm.name);
  const hostMounts: HostMount[] = [];
  const rootMap = `0 ${vm.hostUidBase} ${UIDS_PER_VM}`;
  // Scratch writes (an image build): the guest sees its root and mounts writable, runsc's overlay keeps
  // every write in the Sentry's memory (it overlays only mounts the spec marks writable), and the host
  // side of each mount stays read-only, so a write that got past the overlay would still fail.
  const scratch = vm.spec.scratchWrites === true;
  const docker = isDockerVm(vm.spec);
  const access = (readOnly: boolean) => (readOnly && !scratch ? "ro" : "rw");
  // No cgroup file system in the guest (its limits are on the host cgroup): runsc 20240729 would mount its
  // own cgroupfs there writable whatever the spec's options say (the guest could make cgroups in the
  // Sentry); 20221219 mounted none. A docker VM keeps it: its daemon makes cgroups there, in the Sentry.
  const mounts: OciMount[] = config.mounts.filter((mount) => docker || mount.type !== "cgroup").map((mount, index) => {
    const options = mount.options ?? [];
    const session = mount.type === "bind" ? sessionMountFor(vm.spec, mount.destination) : undefined;
    if (options.includes("idmap") && !session) {
      // An image directory: shown read-only with host root's files as the guest's root, as crun's idmap does.
      const target = join(dir, `image-${index}`);
      hostMounts.push({ source: mount.source, target, kind: "dir", readOnly: true, recursive: true, uidMap: rootMap, gidMap: rootMap });
      return { ...mount, source: target, options: ["rbind", access(true)] };
    }
    if (session) {
      const target = join(dir, `mount-${index}`);
      const idmap = options.find((o) => o.startsWith("idmap="));
      // crun's `idmap=uids=OWNER-BASE-1;gids=GROUP-BASE-1`, as uid_map/gid_map lines.
      const [uids, gids] = (idmap?.slice("idmap=".length).split(";") ?? []).map((part) => part.split("=")[1]!.split("-").join(" "));
      const kind = session.kind === "file" ? "file" : "dir";
      hostMounts.push({ source: mount.source, target, kind, readOnly: !!session.readOnly || scratch, recursive: false, uidMap: uids, gidMap: gids });
      return { ...mount, source: target, options: ["bind", access(!!session.readOnly)] };
    }
    return { ...mount, options: withoutIdmapAndRecursiveFlags(options) };
  });
  const readOnly = (destination: string, source: string): OciMount => ({ destination, type: "bind", source, options: ["bind", "ro"] });
  mounts.push(
    readOnly(GUEST_SECCOMP_EXEC, input.binaries.seccompExec),
    readOnly(GUEST_SECCOMP_FILTER, input.binaries.seccompFilter),
  );
  if (docker) mounts.push(...dockerMounts(vm.spec));
  const { seccomp: _seccomp, ...linux } = config.linux;
  const { hooks: _hooks, ...rest } = config;
  return {
    ...rest,
    ...(scratch ? { root: { ...rest.root, readonly: false } } : {}),
    mounts,
    annotations: { [HOST_MOUNTS_ANNOTATION]: JSON.stringify(hostMounts), ...(scratch ? { [SCRATCH_WRITES_ANNOTATION]: "memory" } : {}), ...(docker ? { [DOCKER_ANNOTATION]: "true" } : {}) },
    process: { ...config.process, args: filteredArgv(config.process.args) },
    linux: {
      ...linux,
      resources: { ...linux.resources, pids: { limit: linux.resources.pids.limit * HOST_TASKS_PER_GUEST_PROCESS } },
    },
  };
}

/** The runsc flags a bundle's config asks its boot for: a scratch-writes VM's overlay, a docker VM's profile. */
export function bootFlagsOf(config: Pick<RuntimeConfig, "annotations">): string[] {
  return [
    ...(config.annotations[SCRATCH_WRITES_ANNOTATION] === "memory" ? [SCRATCH_WRITES_FLAG] : []),
    ...(config.annotations[DOCKER_ANNOTATION] === "true" ? DOCKER_RUNSC_FLAGS : []),
  ];
}

/** The runsc flags each `runsc exec` in this VM needs: runsc exec applies its own, not the boot's. */
export function runscExecFlagsOf(spec: Pick<VmSpec, "docker">): string[] {
  return isDockerVm(spec) ? DOCKER_RUNSC_FLAGS : [];
}

/** The prepared mounts a bundle's config asks for. */
export function hostMountsOf(config: Pick<RuntimeConfig, "annotations">): HostMount[] {
  const text = config.annotations[HOST_MOUNTS_ANNOTATION];
  return text ? (JSON.parse(text) as HostMount[]) : [];
}
