// Request and response schemas shared by the routes. A schema and its static type share one name.
// Integers use TypeBox's own Type.Integer: Elysia's t.Integer also accepts numeric strings ("2").
import { Type } from "@sinclair/typebox";
import { t, type Static } from "elysia";
import { ERROR_CODES } from "../errors";

export const ErrorBody = t.Object(
  { code: t.UnionEnum(ERROR_CODES), message: t.String() },
  { description: "What was wrong and what to do about it" },
);
export type ErrorBody = Static<typeof ErrorBody>;

export const SessionId = t.String({
  minLength: 1,
  maxLength: 128,
  pattern: "^[A-Za-z0-9][A-Za-z0-9_.:-]*$",
  description: "An OpenCode session id, e.g. ses_01J…",
});

export const SessionParams = t.Object({ id: SessionId });

const AbsoluteDirectory = t.String({
  minLength: 1,
  maxLength: 4096,
  pattern: "^/[^\\u0000]*$",
  description: "The session's working directory, an absolute host path",
});

export const RegisterSessionBody = t.Object(
  {
    id: SessionId,
    parentID: t.Optional(t.Nullable(SessionId)),
    forkOf: t.Optional(t.Nullable(SessionId)),
    directory: AbsoluteDirectory,
  },
  { additionalProperties: false },
);
export type RegisterSessionBody = Static<typeof RegisterSessionBody>;

export const Session = t.Object({
  id: t.String(),
  parentID: t.Nullable(t.String()),
  forkOf: t.Nullable(t.String()),
  directory: t.String(),
  rootSessionID: t.String(),
  createdAt: Type.Integer({ description: "Unix epoch milliseconds" }),
});
export type Session = Static<typeof Session>;

const ActivityState = t.UnionEnum(["busy", "idle", "retry", "question", "permission"], { description: "busy or retry: working; idle; question or permission: waiting on the user" });

/** What a session's agent is doing, as its OpenCode plugin last reported. */
export const SessionActivity = t.Object({
  state: ActivityState,
  attempt: t.Nullable(Type.Integer({ description: "The retry's attempt (state retry)" })),
  since: Type.Integer({ description: "When the state last changed, Unix epoch ms" }),
  reportedAt: Type.Integer({ description: "When the plugin last reported it, Unix epoch ms" }),
  holds: t.Boolean({ description: "Whether it holds its root's VM now: working (busy, or retrying up to attempt 3), reported within 180 s and for less than maxHoldMinutes; with holdWhileBusy off nothing holds" }),
});

export const ActivityReport = t.Object(
  {
    state: ActivityState,
    attempt: t.Optional(t.Nullable(Type.Integer({ minimum: 1, maximum: 1_000_000, description: "The retry's attempt, with state retry" }))),
  },
  { additionalProperties: false },
);

/** A session in a listing: one damaged parent chain must not hide every other session. */
export const ListedSession = t.Object({
  ...Session.properties,
  activity: t.Nullable(SessionActivity),
  rootSessionID: t.Nullable(t.String()),
  sandboxed: t.Nullable(t.Boolean({ description: "Whether its commands run sandboxed now (its root's mode, and sandboxing enabled)" })),
  vmName: t.Nullable(t.String({ description: "Its root's VM name (whether or not that VM exists now)" })),
});

export const DeletedSessions = t.Object({ deleted: t.Array(t.String()) });

const Cpus = Type.Integer({ description: "Whole CPUs, at least 1 and at most the host's count" });
const MemoryMib = Type.Integer({ description: "MiB, at least 128 and at most the host's memory" });

export const Resources = t.Object({ cpus: Type.Integer(), memoryMib: Type.Integer() });

/** Egress: none (loopback only, the default), an allowlist of domains and keywords, or all. */
export const NetworkPolicy = t.Union([
  t.Object({ mode: t.Literal("none") }, { additionalProperties: false }),
  t.Object({ mode: t.Literal("all") }, { additionalProperties: false }),
  t.Object(
    {
      mode: t.Literal("allowlist"),
      allow: t.Array(t.String({ minLength: 1, maxLength: 260, description: "a domain (api.github.com, *.example.com) or public, private, loopback, link-local, metadata, host" }), { maxItems: 256 }),
    },
    { additionalProperties: false },
  ),
]);

/** An isolation tier, or auto: the strongest tier that works on this host (GET /api/health lists them). */
const IsolationChoice = t.Union([t.Literal("auto"), t.Literal("container"), t.Literal("gvisor"), t.Literal("microvm")], {
  description: "container: the embedded runtime (namespaces, cgroups, seccomp; shared kernel); gvisor: gVisor's user-space kernel; microvm: a guest kernel of its own (needs KVM); auto: the strongest that works here",
});

/** A guest image: the built-in recipe plus extra Debian packages, an OCI image reference, or the repository's Dockerfile. */
export const ImageChoice = t.Union([
  t.Object(
    {
      kind: t.Literal("recipe"),
      packages: t.Array(t.String({ minLength: 1, maxLength: 128, description: "a Debian package name, e.g. postgresql-client" }), {
        maxItems: 64,
        description: "Added to the built-in image; [] is the built-in image itself",
      }),
    },
    { additionalProperties: false },
  ),
  t.Object(
    { kind: t.Literal("oci"), reference: t.String({ minLength: 1, maxLength: 512, description: "[registry[:port]/]name[:tag][@sha256:<digest>]; a loopback registry is spoken to over plain HTTP" }) },
    { additionalProperties: false },
  ),
  t.Object(
    {
      kind: t.Literal("dockerfile"),
      path: t.String({
        minLength: 1,
        maxLength: 512,
        description: "The Dockerfile, relative to the session's repository, e.g. .opencode-sandbox/Dockerfile; built inside a gVisor sandbox VM, cached by the content of the Dockerfile and what it copies",
      }),
    },
    { additionalProperties: false },
  ),
]);

export const SessionSandbox = t.Object({
  sessionID: t.String(),
  rootSessionID: t.String(),
  sandboxed: t.Boolean(),
  source: t.UnionEnum(["default", "explicit", "inherited", "fork"]),
  serverEnabled: t.Boolean(),
  resources: t.Object({
    override: t.Nullable(t.Object({ cpus: t.Nullable(Type.Integer()), memoryMib: t.Nullable(Type.Integer()) })),
    effective: Resources,
  }),
  network: t.Object({ override: t.Nullable(NetworkPolicy), effective: NetworkPolicy }),
  image: t.Object({ override: t.Nullable(ImageChoice), effective: ImageChoice }),
  isolation: t.Object({ override: t.Nullable(IsolationChoice), effective: IsolationChoice }),
  docker: t.Object({ override: t.Nullable(t.Boolean()), effective: t.Boolean() }, { description: "A Docker Engine in the session's VM (docs/docker.md)" }),
  secrets: t.Object(
    {
      granted: t.Array(t.String(), { description: "Secret names a human granted to the root session" }),
      effective: t.Array(t.String(), { description: "The configured secrets its commands get: scope all, plus the granted ones of scope granted" }),
    },
    { description: "Secret names only, never values" },
  ),
  toggledAt: t.Nullable(Type.Integer({ description: "Unix epoch milliseconds of the last explicit toggle" })),
  vmName: t.String(),
  lastStop: t.Nullable(
    t.Object(
      { vmName: t.String(), status: t.String(), reason: t.Nullable(t.String()), at: Type.Integer() },
      { description: "The last stop or removal of this root's VM and its reason (idle, cap, toggle-off, deleted, spec-change, crash, sweep, manual, disabled)" },
    ),
  ),
});
export type SessionSandbox = Static<typeof SessionSandbox>;

export const SessionSandboxUpdate = t.Object(
  {
    sandboxed: t.Optional(t.Boolean()),
    resources: t.Optional(
      t.Nullable(t.Object({ cpus: t.Optional(Cpus), memoryMib: t.Optional(MemoryMib) }, { additionalProperties: false })),
    ),
    network: t.Optional(t.Nullable(NetworkPolicy)),
    image: t.Optional(t.Nullable(ImageChoice)),
    isolation: t.Optional(t.Nullable(IsolationChoice)),
    docker: t.Optional(
      t.Nullable(t.Boolean({ description: "A Docker Engine in the VM, on a tier that can hold one (400 DOCKER_UNAVAILABLE otherwise); off stops it and removes its data" })),
    ),
    // Any text: a name that is not configured is a 400 that lists the configured ones, more useful than a 422.
    secrets: t.Optional(
      t.Array(t.String({ minLength: 1, maxLength: 128 }), {
        maxItems: 256,
        description: "Names of configured secrets (SANDBOX_SECRETS) granted to the root session, replacing its grants; [] revokes them all",
      }),
    ),
  },
  { additionalProperties: false },
);
export type SessionSandboxUpdate = Static<typeof SessionSandboxUpdate>;

/** A secret configured on the manager: its name, the hosts its value may go to, and who gets it. Never a value. */
export const ConfiguredSecret = t.Object({
  name: t.String(),
  hosts: t.Array(t.String()),
  scope: t.UnionEnum(["all", "granted"], { description: "all: every sandboxed session; granted: only root sessions it is granted to" }),
});

export const SandboxSettings = t.Object({
  enabled: t.Boolean(),
  defaultForNewSessions: t.Boolean(),
  cpus: Type.Integer(),
  memoryMib: Type.Integer(),
  idleStopMinutes: Type.Integer({ description: "A quiescent VM unused this long (no command and no activity of its sessions) is removed with its volume" }),
  idleSuspendMinutes: Type.Integer({ description: "0 = off; else a quiescent VM unused this long is stopped first (volume kept) and restarts at its next command" }),
  holdWhileBusy: t.Boolean({ description: "A working session (busy, or retrying within the limit) holds its VM: not removed by the idle sweep, not evicted by the cap" }),
  maxHoldMinutes: Type.Integer({ description: "The longest one busy stretch holds a VM; past it the session counts as quiescent" }),
  maxRunningVms: Type.Integer(),
  execTimeoutMs: Type.Integer(),
  network: NetworkPolicy,
  forwardGitCredentials: t.Boolean(),
  diskMib: Type.Integer({ description: "Disk quota of each VM's home volume (and the most /tmp holds), MiB" }),
  image: ImageChoice,
  maxImageMib: Type.Integer({ description: "The most an image build or pull may unpack to, MiB; past it the build or pull is stopped (IMAGE_TOO_LARGE)" }),
  isolation: IsolationChoice,
  docker: t.Boolean({ description: "Whether sessions without an override of their own get a Docker Engine in their VM" }),
});
export type SandboxSettings = Static<typeof SandboxSettings>;

/** Each key set to a value, or to null to return to its default (env, then built-in). */
export const SandboxSettingsPatch = t.Object(
  {
    enabled: t.Optional(t.Nullable(t.Boolean())),
    defaultForNewSessions: t.Optional(t.Nullable(t.Boolean())),
    cpus: t.Optional(t.Nullable(Cpus)),
    memoryMib: t.Optional(t.Nullable(MemoryMib)),
    idleStopMinutes: t.Optional(t.Nullable(Type.Integer({ description: "1 to 10080" }))),
    idleSuspendMinutes: t.Optional(t.Nullable(Type.Integer({ description: "0 (off, the default) to 10080, below idleStopMinutes" }))),
    holdWhileBusy: t.Optional(t.Nullable(t.Boolean({ description: "Default true; false: a VM is removed at the idle time even while its session works" }))),
    maxHoldMinutes: t.Optional(t.Nullable(Type.Integer({ description: "1 to 10080 (default 480)" }))),
    maxRunningVms: t.Optional(t.Nullable(Type.Integer({ description: "1 to 256" }))),
    execTimeoutMs: t.Optional(t.Nullable(Type.Integer({ description: "1000 to 86400000" }))),
    network: t.Optional(t.Nullable(NetworkPolicy)),
    forwardGitCredentials: t.Optional(t.Nullable(t.Boolean({ description: "Opt-in: forward SANDBOX_GIT_CREDENTIALS into sandboxes" }))),
    diskMib: t.Optional(t.Nullable(Type.Integer({ description: "MiB, at least 64 and at most the free space where the VMs' volumes live; a change recreates each VM at its next command, resizing its volume" }))),
    image: t.Optional(t.Nullable(ImageChoice)),
    maxImageMib: t.Optional(t.Nullable(Type.Integer({ description: "MiB, 64 to 1048576 (default 16384); applies to builds and pulls from then on" }))),
    isolation: t.Optional(t.Nullable(IsolationChoice)),
    docker: t.Optional(t.Nullable(t.Boolean({ description: "Default false; true needs a default isolation whose tier can hold a Docker Engine (400 DOCKER_UNAVAILABLE otherwise)" }))),
  },
  { additionalProperties: false },
);
export type SandboxSettingsPatch = Static<typeof SandboxSettingsPatch>;

const TierStatus = t.Object({ available: t.Boolean(), reason: t.String({ description: "What it runs on, or why it does not work here and the fix" }) });

export const Health = t.Object({
  status: t.Literal("ok"),
  version: t.String(),
  runtime: t.Object({
    name: t.Nullable(t.String()),
    available: t.Boolean(),
    version: t.Nullable(t.String()),
    reason: t.String({ description: "Why this runtime is in use, or why none is" }),
    notUsed: t.Record(t.String(), t.String(), { description: "For each runtime not in use, why not" }),
    tiers: t.Optional(
      t.Object(
        { container: TierStatus, gvisor: TierStatus, microvm: TierStatus },
        { description: "Which isolation tiers this manager can run a session in (the isolation setting), and why not the others" },
      ),
    ),
  }),
  host: Resources,
});
export type Health = Static<typeof Health>;

export const ExecBody = t.Object(
  {
    command: t.String({ minLength: 1, maxLength: 256 * 1024, pattern: "^[^\\u0000]*$", description: "Run as `sh -c <command>` in the VM, byte for byte (no NUL: argv cannot carry one)" }),
    cwd: t.Optional(t.String({ minLength: 1, maxLength: 4096, pattern: "^/[^\\u0000]*$", description: "Absolute; must lie inside the session's mounts. Default: the session's directory" })),
    env: t.Optional(
      t.Record(t.String({ pattern: "^[A-Za-z_][A-Za-z0-9_]*$", maxLength: 256 }), t.String({ maxLength: 64 * 1024, pattern: "^[^\\u0000]*$" }), {
        additionalProperties: false,
      }),
    ),
    timeoutMs: t.Optional(Type.Integer({ description: "Defaults to the execTimeoutMs setting; 1 to 86400000" })),
    callID: t.Optional(t.String({ minLength: 1, maxLength: 256, description: "Cancel it by this id (POST /api/sessions/:id/execs/:callID/cancel); default: a new ULID, sent back in `started`" })),
    background: t.Optional(
      t.Boolean({
        description:
          "Start it and answer at once (202, its call id) instead of streaming its output: a dev server, a watcher. Its latest output is kept (GET …/processes/:callID/logs); it runs until it ends, its timeout (default: a day) or DELETE …/processes/:callID",
      }),
    ),
    stdin: t.Optional(
      t.String({
        pattern: "^[A-Za-z0-9+/]*={0,2}$",
        description: "The command's standard input, base64 (within the 1 MiB JSON body); default: empty. Larger or streamed input: send the body as application/vnd.session-sandbox.exec-stdin (docs/api.md)",
      }),
    ),
  },
  { additionalProperties: false },
);
export type ExecBody = Static<typeof ExecBody>;

/** One command of a session's exec history. */
export const ExecHistoryEntry = t.Object({
  id: t.String({ description: "A ULID: history ids sort by start" }),
  sessionID: t.String(),
  rootSessionID: t.String(),
  callID: t.String(),
  vmName: t.String(),
  command: t.String({ description: "The command (its first 4096 characters)" }),
  cwd: t.String(),
  startedAt: Type.Integer({ description: "Unix epoch milliseconds" }),
  finishedAt: t.Nullable(Type.Integer({ description: "Unix epoch milliseconds; null while it runs" })),
  durationMs: t.Nullable(Type.Integer()),
  exitCode: t.Nullable(Type.Integer({ description: "null while it runs, or when the runtime failed (see error)" })),
  timedOut: t.Boolean(),
  cancelled: t.Boolean(),
  oomKilled: t.Boolean({ description: "The kernel killed it at the VM's memory limit" }),
  error: t.Nullable(t.String({ description: "Why the runtime failed mid-command, with its code" })),
  outputTail: t.String({ description: "The last 4 KiB of stdout and stderr merged in arrival order, as UTF-8; empty while it runs" }),
  outputBytes: Type.Integer({ description: "Bytes of output in all" }),
});
export type ExecHistoryEntry = Static<typeof ExecHistoryEntry>;

export const ExecHistoryQuery = t.Object(
  { limit: t.Optional(t.Numeric({ minimum: 1, maximum: 200, multipleOf: 1, description: "At most this many, newest first; default 50" })) },
  { additionalProperties: false },
);

export const ExecCallParams = t.Object({ id: SessionId, callID: t.String({ minLength: 1, maxLength: 256 }) });

export const VmParams = t.Object({ name: t.String({ pattern: "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$" }) });

export const Vm = t.Object({
  name: t.String(),
  rootSessionID: t.Nullable(t.String()),
  status: t.UnionEnum(["absent", "booting", "running", "stopping", "stopped", "removing"]),
  spec: t.Nullable(t.Object({ cpus: Type.Integer(), memoryMib: Type.Integer(), tmpSizeMib: Type.Integer(), mounts: t.Array(t.String()), image: t.String() })),
  createdAt: t.Nullable(Type.Integer()),
  lastUsedAt: Type.Integer(),
  runningExecs: Type.Integer(),
  lastStopReason: t.Nullable(t.String()),
});
export type Vm = Static<typeof Vm>;

export const ImageView = t.Object({
  image: t.String({ description: "What was asked, normalized: default, recipe:<packages> or oci:<reference>; the key for DELETE" }),
  choice: ImageChoice,
  description: t.String(),
  status: t.UnionEnum(["building", "pulling", "ready", "failed"]),
  detail: t.Nullable(t.String({ description: "The latest progress line, or the reason it failed" })),
  digest: t.Nullable(t.String()),
  path: t.Nullable(t.String()),
  sizeBytes: t.Nullable(Type.Integer()),
  usedBy: t.Array(t.String()),
  createdAt: t.Nullable(Type.Integer()),
  lastUsedAt: t.Nullable(Type.Integer()),
});

/** The manager CA that every VM trusts: its certificate only, never the key. */
export const ManagerCaView = t.Object({
  certificatePem: t.String({ description: "The CA certificate, PEM" }),
  fingerprint: t.String({ description: "SHA-256 of the certificate, hex with colons, as `openssl x509 -noout -fingerprint -sha256` prints it" }),
  notAfter: Type.Integer({ description: "When the CA certificate expires, Unix epoch milliseconds" }),
});
export type ManagerCaView = Static<typeof ManagerCaView>;

export const RotatedCa = t.Object({ ...ManagerCaView.properties, previousFingerprint: t.String({ description: "The fingerprint of the CA it replaced" }) });

/** The error entries of a route's `response`: each status answers `{ code, message }`. */
export function errors<const S extends number>(...statuses: S[]): Record<S, typeof ErrorBody> {
  return Object.fromEntries(statuses.map((status) => [status, ErrorBody])) as Record<S, typeof ErrorBody>;
}
