// The contract every runtime driver implements (local = embedded namespaces/cgroups; msb = microVM).
// The session actor drives a VM only through this interface. Plain data in and out: specs and results
// cross a Worker boundary.
import type { NetworkPolicy } from "../egress/network-policy";
import type { IsolationTier } from "./isolation";

/**
 * A directory (or, with `kind: "file"`, a file) mounted into the VM at the identical absolute path,
 * read-write unless `readOnly`. `pin` is the identity the mounted directory must have: the driver checks
 * what it actually mounted against it (and against `hostPath`) before any command runs.
 */
/**
 * A directory the guest shares with the host and the host runs programs from (a repository): it is served
 * through a repository view (runtime/repo-fs, docs/repository-guard.md), which applies the repository
 * rules to every change the guest makes. `keep`: directories (relative to the mount) the guest may not
 * remove or rename; `gitDirs`: git dirs inside it under another name than `.git`; `gitDirRoot`: the mount
 * is itself a git dir (a linked worktree's main repository).
 */
export type RepoGuard = { keep?: string[]; gitDirs?: string[]; gitDirRoot?: boolean };

export type BindMount = { hostPath: string; readOnly?: boolean; kind?: "file"; pin?: { dev: number; ino: number }; guard?: RepoGuard };


export type VmSpec = {
  /** The VM's name, e.g. `ocm-session-0123456789ab` (`^[A-Za-z0-9][A-Za-z0-9._-]*$`, ≤ 63 chars). */
  name: string;
  /** Root filesystem: for `local` a directory path, for `msb` an image reference. */
  image: string;
  cpus: number;
  memoryMib: number;
  mounts: BindMount[];
  /** Size of the private `/tmp` tmpfs. */
  tmpSizeMib: number;
  /** The persistent data volume, mounted at `/home/agent` (HOME); survives stop/start and recreation. */
  volume: { name: string };
  /**
   * The volume's disk quota: writes past it fail with ENOSPC in the guest. Default DEFAULT_DISK_MIB.
   * local: a fixed-size ext4 image, grown or shrunk when this changes; msb: recorded, not enforced.
   */
  diskMib?: number;
  labels: Record<string, string>;
  network: NetworkPolicy;
  /**
   * Host directory of the CA files the VM trusts, named by a hash of their content (so a rotated manager
   * CA is a changed spec and the VM is recreated at its next command): TRUST_BUNDLE_FILE (the manager CA
   * and the operator's private CAs first, then the image's own roots) and TRUST_MANAGER_CA_FILE (those CAs
   * without the image's roots: the file keeps its name from when it held the manager CA alone). Mounted
   * read-only at GUEST_TRUST_DIR, and its bundle over GUEST_SYSTEM_CA_BUNDLE where the image has that file.
   */
  trustDir?: string;
  /**
   * The isolation tier the VM runs in (runtime/isolation.ts). Read by the tiered driver
   * (runtime/tiered.ts), which runs the VM on that tier's driver; a single driver ignores it.
   */
  isolation?: IsolationTier;
  /** What only the drivers of one kind of tier read; written by the tier that places the VM (runtime/tiers/). */
  tierPart?: TierPart;
  /**
   * Every write the guest makes, to its root, its mounts and its volume alike, stays in the VM's own memory
   * (within memoryMib) and is gone when it stops; the host's files are never written. For image
   * builds (app/images/dockerfile-build.ts). Only a tier with a kernel of its own keeps it (gVisor); the
   * container tier refuses it, since it has no writable root it could keep from the host.
   */
  scratchWrites?: boolean;
  /**
   * The VM holds a Docker Engine (the root's docker setting, on a tier that can: runtime/tiers/). gVisor
   * grants what a daemon needs inside its own kernel (runtime/gvisor/docker-profile.ts); the microvm tier's
   * guests have a kernel of their own and need nothing; the container tier refuses it.
   */
  docker?: boolean;
};

/** A secret the microvm tier's runtime substitutes itself: the guest sees a placeholder; `value` reaches only the runtime's env. */
export type MicrovmSecret = { env: string; hosts: string[]; value: string };

/**
 * - `embedded` (container, gvisor): `egressSocket`, the host path of the VM's egress proxy socket, for a
 *   network mode other than none. The VM has no route out; its 127.0.0.1:3128 is forwarded to this socket,
 *   where the host-side proxy applies the policy. The manager owns the proxy; the driver only wires the VM to it.
 * - `microvm` (msb): `secrets` msb substitutes itself, `--secret ENV@HOSTS` (runtime/msb/secret-args.ts).
 */
export type TierPart = { kind: "embedded"; egressSocket?: string } | { kind: "microvm"; secrets: MicrovmSecret[] };

export function egressSocketOf(spec: Pick<VmSpec, "tierPart">): string | undefined {
  return spec.tierPart?.kind === "embedded" ? spec.tierPart.egressSocket : undefined;
}

export function microvmSecretsOf(spec: Pick<VmSpec, "tierPart">): MicrovmSecret[] {
  return spec.tierPart?.kind === "microvm" ? spec.tierPart.secrets : [];
}

export const TRUST_BUNDLE_FILE = "ca-certificates.crt";
export const TRUST_MANAGER_CA_FILE = "manager-ca.crt";
/** Where every VM sees its trust directory; the exec env points SSL_CERT_FILE and its kin into it. */
export const GUEST_TRUST_DIR = "/run/session-sandbox";
export const GUEST_CA_BUNDLE = `${GUEST_TRUST_DIR}/${TRUST_BUNDLE_FILE}`;
export const GUEST_MANAGER_CA = `${GUEST_TRUST_DIR}/${TRUST_MANAGER_CA_FILE}`;
/** The system trust store of Debian, Ubuntu and Alpine images, which OpenSSL, curl and git read by default. */
export const GUEST_SYSTEM_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt";

/** A home volume's disk quota when the spec names none: room for toolchains and caches; sparse, so unused MiB cost nothing. */
export const DEFAULT_DISK_MIB = 4096;
/** The smallest disk quota: below it ext4's journal and metadata leave too little room to be useful. */
export const MIN_DISK_MIB = 64;

export type VmStatus = "running" | "stopped";

/** What the runtime actually has for a VM: used to attest a VM before reuse. */
export type VmInfo = { name: string; status: VmStatus; spec: VmSpec; createdAt: number };

/** A running VM's cgroup counters. CPU time is cumulative (a rate gives the CPU use). */
export type VmCgroupStats = { cpuSeconds: number; memoryBytes: number; memoryLimitBytes: number | null; pids: number; pidsLimit: number | null };
/** The filesystem of a VM's home volume, as `df` in the guest sees it. */
export type VolumeDiskStats = { usedBytes: number; sizeBytes: number };
/** What a VM uses now: `usage` only while it runs, `disk` while its volume exists (stopped VMs keep it). */
export type VmStats = { name: string; status: VmStatus; usage: VmCgroupStats | null; disk: VolumeDiskStats | null };

export type ExecRequest = {
  /** Passed through verbatim as argv; no shell is added by the driver. */
  argv: string[];
  cwd: string;
  env?: Record<string, string>;
  timeoutMs?: number;
  signal?: AbortSignal;
  /**
   * The command's standard input, read only as fast as the command takes it; its end is the command's
   * end of file. Absent: stdin is /dev/null. A driver that stops reading (the command exited) cancels it.
   */
  stdin?: ReadableStream<Uint8Array>;
  /**
   * The guest user and group the command runs as (a Dockerfile build's USER), ids of the VM's own user
   * namespace (0–65535); absent: the VM's root. Only the gVisor driver runs it (builds run there); the
   * others refuse it.
   */
  user?: GuestUser;
};

export type GuestUser = { uid: number; gid: number };

/** The ids a VM's user namespace maps: a user outside it cannot exist in the guest. */
export const GUEST_IDS = 65536;

/** Why `user` cannot run in a VM, or undefined when it can. */
export function guestUserProblem(user: GuestUser): string | undefined {
  const bad = [user.uid, user.gid].find((id) => !Number.isInteger(id) || id < 0 || id >= GUEST_IDS);
  return bad === undefined ? undefined : `guest user ${user.uid}:${user.gid} is outside the VM's ids (0–${GUEST_IDS - 1})`;
}

/**
 * The consumer's window on a command's output: undefined while it has room, else a promise that settles once
 * it has room again. A producer given a promise reads no more of the guest's output until it settles, so the
 * guest's own writes block: output is paused, never dropped and never buffered without bound (each hop of
 * the way to the client has one; docs/api.md, "Output and slow readers").
 */
export type OutputRoom = () => Promise<void> | undefined;

export type ExecSink = {
  stdout(chunk: Uint8Array): void;
  stderr(chunk: Uint8Array): void;
  /** Asked after each chunk; absent: the consumer takes everything as it comes. */
  room?: OutputRoom;
};

export type ExecResult = {
  /** The guest command's exit code (128+n when killed by signal n). */
  exitCode: number;
  timedOut: boolean;
  cancelled: boolean;
  /**
   * The kernel killed it at the VM's memory limit (its exit is SIGKILL's, and the VM's OOM kill count rose
   * meanwhile). Absent: not so, or the runtime cannot tell (msb: the guest's own kernel does the killing).
   */
  oomKilled?: true;
};

/** An interactive command: it gets a terminal (PTY) of its own inside the guest, `rows` × `cols` to start with. */
export type TerminalRequest = Omit<ExecRequest, "argv"> & { rows: number; cols: number };

/** A running terminal: keystrokes in, a new window size, and how it ended. Its output goes to the sink given at open. */
export type TerminalHandle = {
  /** Bytes typed at the terminal (Ctrl-C is byte 3: the guest's line discipline turns it into SIGINT). */
  write(data: Uint8Array): void;
  /** End of input: the guest's terminal sees end-of-file. */
  closeInput(): void;
  /** Sets the guest terminal's window size (the programs in it get SIGWINCH). */
  resize(rows: number, cols: number): Promise<void>;
  result: Promise<ExecResult>;
};

export type Capability = {
  available: boolean;
  /** The driver's name and version, e.g. "local (crun 1.8.1, cgroup v1/v2 hybrid)". */
  version: string;
  /** Every missing piece, each with how to fix it. Empty when available. */
  problems: { what: string; fix: string }[];
};

/** Thrown for a runtime failure (not a guest exit code): the VM could not be created, started, reached. */
export class RuntimeError extends Error {
  constructor(
    readonly code: "NOT_FOUND" | "ALREADY_EXISTS" | "UNAVAILABLE" | "FAILED",
    message: string,
  ) {
    super(message);
    this.name = "RuntimeError";
  }
}

export type CreateOptions = {
  /** Remove an existing VM of the same name first, keeping its volume: how a changed spec recreates a VM. */
  replace?: boolean;
};

/** Whether a VM the runtime holds matches the spec a command needs; each mismatch names the field and both values. */
export type Attestation = { ok: true } | { ok: false; mismatches: string[] };

/**
 * What `ensure` did: `reused` (running and attested), `started` (stopped, attested), `created` (absent),
 * `recreated` (attestation failed: `mismatches` say why; the volume is kept) or `replaced-orphan` (the
 * name was taken by something inspect cannot see, e.g. a half-created VM: replaced, volume kept).
 */
export type EnsureAction = "reused" | "started" | "created" | "recreated" | "replaced-orphan";
export type EnsureResult = { info: VmInfo; action: EnsureAction; mismatches: string[] };

export type RemoveOptions = { keepVolume?: boolean };

export interface RuntimeDriver {
  readonly name: "local" | "gvisor" | "msb";
  probe(): Promise<Capability>;
  /**
   * The one lifecycle call the session actor makes to get a running VM: converges the VM named by
   * `spec.name` to `spec` (see EnsureAction). Drivers implement it with ensureVm (runtime/ensure.ts).
   */
  ensure(spec: VmSpec): Promise<EnsureResult>;
  /**
   * Compares the spec fields that matter on this runtime with what it holds (pure, no I/O): local keeps
   * the spec verbatim and compares all of it, pins included; msb compares what `msb inspect` reports back.
   */
  attest(expected: VmSpec, actual: VmInfo): Attestation;
  /** Cheap liveness check of the runtime itself (not of a VM). */
  ping(): Promise<boolean>;
  /**
   * Creates and starts the VM. ALREADY_EXISTS if the name is taken (unless `replace`). An existing volume
   * of the spec's volume name is reused, so data survives recreation; only remove() deletes a volume.
   */
  create(spec: VmSpec, options?: CreateOptions): Promise<VmInfo>;
  start(name: string): Promise<void>;
  /** Powers off: processes and /tmp are lost; the volume stays. Idempotent. */
  stop(name: string): Promise<void>;
  /**
   * Removes the VM and its volume; with `keepVolume`, the VM only (the tiered driver moving a VM to
   * another tier leaves the old tier's data in place). Idempotent: a missing VM counts as removed.
   */
  remove(name: string, options?: RemoveOptions): Promise<void>;
  exec(name: string, request: ExecRequest, sink: ExecSink): Promise<ExecResult>;
  /**
   * Runs the guest's interactive shell under a PTY made inside the VM (never on the host); its output,
   * stdout and stderr merged as a terminal shows them, goes to `output`, paced by `room` as an exec's sink is.
   * Absent where a runtime has none.
   */
  openTerminal?(name: string, request: TerminalRequest, output: (chunk: Uint8Array) => void, room?: OutputRoom): TerminalHandle;
  inspect(name: string): Promise<VmInfo | undefined>;
  /** VMs whose labels include every given label. */
  list(labels: Record<string, string>): Promise<VmInfo[]>;
  /** Names of every data volume, including those whose VM is gone (crash leftovers). */
  listVolumes?(): Promise<string[]>;
  /** Deletes a data volume by name. Idempotent. */
  removeVolume?(name: string): Promise<void>;
  /**
   * Removes what a crash left half-created (VMs and volumes list() cannot see), keeping volumes that
   * may hold data. Only while nothing else drives this runtime state, i.e. at manager startup.
   */
  cleanUpIncomplete?(): Promise<string[]>;
  /**
   * What the VM uses now, read at call time (local: its cgroups and its volume's image); undefined for an
   * unknown VM. Absent on runtimes that cannot tell (msb: its VMs' usage is inside the microVM).
   */
  stats?(name: string): Promise<VmStats | undefined>;
}
