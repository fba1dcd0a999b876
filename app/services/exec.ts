// The exec service: every agent command and every operator shell goes through here, prepare → the VM's
// egress proxy → the supervisor (exec-runs.ts adds the history and cancel-by-call-id for commands), and
// anything that stops one before it starts is counted once as a refusal. prepare turns a request into what
// the supervisor runs: the session's root, its VM spec, and the command as one argument to `sh -c`, byte
// for byte; it refuses (4xx) before anything runs anywhere. The routes only frame the stream.
import type { VmSpec } from "../../runtime/driver";
import type { IsolationChoice, TierResolution } from "../../runtime/isolation";
import { GUEST_HOME, GUEST_PATH } from "../../runtime/guest-layout";
import type { OnChunk } from "../../workers/actor-handle";
import type { ExecCommand, ExecOutcome } from "../../workers/protocol";
import { DomainError, NotSandboxedError, RuntimeFailedError, SettingOutOfRangeError } from "../errors";
import type { EventBus } from "../events/event-bus";
import type { Metrics } from "../metrics";
import type { Supervisor, TerminalControl } from "../supervisor/supervisor";
import type { SecretRule } from "../../egress/index";
import type { Credentials } from "./credentials";
import { proxyEnv, type EgressProxies } from "./egress-proxies";
import { msbForwarding } from "./msb-egress";
import type { ExecHistory } from "./exec-history";
import { createExecRuns, type ExecHooks } from "./exec-runs";
import type { ProtectedDirs } from "./mount-deny-list";
import { checkCwd, mountsOf, pinSessionMounts, verifyPinnedMounts } from "./mounts";
import type { SessionSandboxService } from "./session-sandbox";
import type { SessionsService } from "./sessions";
import type { SettingsService } from "./settings";
import type { UsersService } from "./users";
import { shellOf, type ShellOptions } from "./shell";
import type { ImageService } from "../images/image-service";
import { caBundleEnv } from "../tls/ca-bundles";
import { newId } from "../ids";
import { vmLabelsFor } from "../vm-identity";

export type ExecBody = { command: string; cwd?: string; env?: Record<string, string>; timeoutMs?: number; callID?: string };

export type PreparedExec = {
  sessionId: string;
  rootSessionID: string;
  /** The caller's call id, or a new ULID: every command can be cancelled by its call id. */
  callID: string;
  spec: VmSpec;
  command: ExecCommand;
  /** Secret substitutions the VM's egress proxy applies for this command's session. */
  proxyRules: SecretRule[];
};

/**
 * Git in the guest trusts every directory: a worktree's read-only `.git` pointer file is mounted without
 * an id mapping (crun cannot idmap a file), so it shows as owned by nobody, and git's ownership check
 * would refuse the worktree. Inside the VM every file is the guest's anyway; the check protects hosts.
 * Command-line scope (GIT_CONFIG_PARAMETERS), where git honours safe.directory.
 */
const GUEST_GIT_ENV = { GIT_CONFIG_PARAMETERS: "'safe.directory=*'" };
export const MAX_EXEC_TIMEOUT_MS = 24 * 60 * 60 * 1000;

/** The design's /tmp size: min(512, max(1, floor(memoryMib / 4))) MiB. */
export function tmpSizeMibFor(memoryMib: number): number {
  return Math.min(512, Math.max(1, Math.floor(memoryMib / 4)));
}

export type ExecServiceDeps = {
  sessions: SessionsService;
  sessionSandbox: SessionSandboxService;
  settings: SettingsService;
  /** Turns a session's image choice into what its VM boots, building or pulling it first if needed. */
  images: Pick<ImageService, "bootImage">;
  /** Shared OpenCode directories mounted into every VM (tool output, skills, agent tmp). */
  sharedDirs: string[];
  /** Set when no runtime is usable: every command is refused with this reason. */
  runtimeUnavailable?: string;
  /** The tier a session's isolation choice runs in here, or why none can (runtime/isolation.ts). */
  placeIsolation: (choice: IsolationChoice) => TierResolution;
  /** The VMs' egress proxies, whose lifecycle this service owns (see ownEgressProxies). */
  egress: EgressProxies;
  /** VM removals close their egress proxies. */
  events: EventBus;
  supervisor: Pick<Supervisor, "exec"> & Partial<Pick<Supervisor, "warm">>;
  execHistory: ExecHistory;
  metrics: Pick<Metrics, "refusals">;
  /** Secrets and git credentials for the guest (placeholders) and its proxy (values). */
  credentials?: Credentials;
  /** The manager's own directories, which no session may mount. */
  protectedDirs: ProtectedDirs;
  /** The host path of the trust directory (manager CA, and it with the image's roots) of a VM booting `image`. */
  caBundleFor: (image: string) => string;
  /** Who owns a root, and whether they may mount a directory (docs/non-root.md); absent: every root is the manager's. */
  users?: Pick<UsersService, "ownerOf" | "ownerPrincipal" | "requireAccess">;
};

/** A command that started in its VM; its outcome is still to come (never rejects). */
export type StartedExec = { prepared: PreparedExec; outcome: Promise<{ ok: true; result: ExecOutcome } | { ok: false; error: unknown }> };

export type ShellHooks = {
  /** Aborting it kills the shell in the VM (the operator went away). */
  signal: AbortSignal;
  onStarted(vmName: string): void;
  /** A promise: the operator's socket cannot take more yet, and the shell's output waits. */
  onChunk: OnChunk;
  onTerminal(control: TerminalControl): void;
};

/**
 * The egress proxy's whole lifecycle, for reference; this service owns it:
 * - prepare puts the proxy's socket path into the VM spec (spec.egressSocket) for a network mode other than none;
 * - openWayOut starts it (with the command's secret substitutions) before every command or shell runs;
 * - the runtime mounts the socket's directory into the guest and hands the socket to the VM's uid as the
 *   VM starts (runtime/local/oci-config.ts, runtime/local/egress-socket.ts);
 * - revocation cuts its open connections and keeps it listening (app/services/egress-revocation.ts);
 * - it closes when its VM is removed (the subscription below), and every one closes at shutdown (app/main.ts).
 */
function ownEgressProxies(egress: EgressProxies, events: EventBus): void {
  const stop = new AbortController();
  void (async () => {
    for await (const event of events.subscribe(stop.signal)) {
      if (event.type === "vm" && event.status === "removed") void egress.close(event.vmName);
    }
  })();
}

export function createExecService(deps: ExecServiceDeps) {
  const { sessions, sessionSandbox, settings, images, sharedDirs, runtimeUnavailable, placeIsolation, egress: proxies, credentials, protectedDirs, caBundleFor, supervisor, metrics } = deps;
  const runs = createExecRuns(supervisor, deps.execHistory);
  ownEgressProxies(proxies, deps.events);

  /**
   * Pinned at the root's first command; every later one is checked against the pins, never re-resolved. A
   * root a user registered mounts only what that user can read, write and enter: the git top level or the
   * common dir may lie above the directory it named (docs/non-root.md).
   */
  function pinnedMountsOf(rootSessionID: string, directory: string) {
    const pinned = sessions.pinnedMounts(rootSessionID);
    if (!pinned) {
      const pins = pinSessionMounts(directory, protectedDirs);
      const owner = deps.users?.ownerPrincipal(rootSessionID);
      if (owner) for (const dir of [pins.directory, pins.top, pins.commonDir]) if (dir) deps.users!.requireAccess(owner, dir.path);
      return sessions.pinMounts(rootSessionID, pins);
    }
    verifyPinnedMounts(rootSessionID, pinned);
    return pinned;
  }

  function bundleFor(image: string): string {
    try {
      return caBundleFor(image);
    } catch (error) {
      throw new RuntimeFailedError(`the VM's CA files could not be written, so nothing ran: ${(error as Error).message}`);
    }
  }

  /** Every refusal is checked before the image: a command that would be refused never waits for a pull. */
  async function prepare(sessionId: string, body: ExecBody): Promise<PreparedExec> {
    const view = sessionSandbox.get(sessionId);
    if (!view.sandboxed) {
      throw new NotSandboxedError(sessionId, view.serverEnabled ? "its sandbox mode is off" : "sandboxing is disabled server-wide");
    }
    // The actor's Worker starts beside the checks below; it boots nothing until the command is handed to it.
    supervisor.warm?.(view.vmName);
    const root = sessions.require(view.rootSessionID);
    const pins = pinnedMountsOf(root.id, root.directory);
    // The shared OpenCode directories are the manager's (root's), the same in every VM: a user's VM, which
    // that user's token drives, must not reach what other sessions left there (docs/non-root.md).
    const { mounts, roots } = mountsOf(pins, deps.users?.ownerOf(root.id) !== undefined ? [] : sharedDirs);
    // Without a cwd the command runs in the session's own directory.
    const cwd = checkCwd(body.cwd ?? sessions.require(sessionId).directory, roots);
    // Never a weaker tier than the one asked for: a tier that stopped working here refuses the command.
    const placement = placeIsolation(view.isolation.effective);
    if (!placement.tier) throw new RuntimeFailedError(`the session's isolation cannot be met, so the command was not run: ${placement.reason}`);
    if (runtimeUnavailable) throw new RuntimeFailedError(`no sandbox runtime is usable, so the command was not run: ${runtimeUnavailable}`);
    const { execTimeoutMs, forwardGitCredentials, diskMib } = settings.get();
    const forwarding = credentials?.resolve(pins.top.path, forwardGitCredentials, view.secrets.effective) ?? { env: {}, proxyRules: [] };
    const timeoutMs = body.timeoutMs ?? execTimeoutMs;
    if (timeoutMs < 1 || timeoutMs > MAX_EXEC_TIMEOUT_MS) {
      throw new SettingOutOfRangeError(`timeoutMs ${timeoutMs} is out of range: it must be between 1 and ${MAX_EXEC_TIMEOUT_MS} ms`);
    }
    const { cpus, memoryMib } = view.resources.effective;
    const egress = view.network.effective.mode !== "none";
    // A microvm (msb) has no forwarder to the host proxy: msb's own rules, secrets and CA (msb-egress.ts).
    const msb = placement.tier === "microvm" ? msbForwarding(forwarding) : undefined;
    const image = await images.bootImage(view.image.effective);
    const spec: VmSpec = {
      name: view.vmName,
      image,
      cpus,
      memoryMib,
      mounts,
      // /tmp is memory (tmpfs), bounded by its size and the memory limit; it never exceeds the disk quota either.
      tmpSizeMib: Math.min(tmpSizeMibFor(memoryMib), diskMib),
      volume: { name: view.vmName },
      diskMib,
      labels: vmLabelsFor(view.rootSessionID),
      network: view.network.effective,
      ...(egress && !msb ? { egressSocket: proxies.socketPathFor(view.vmName) } : {}),
      ...(msb ? { secrets: msb.secrets } : { trustDir: bundleFor(image) }),
      isolation: placement.tier,
    };
    return {
      sessionId,
      rootSessionID: view.rootSessionID,
      callID: body.callID ?? newId(),
      spec,
      // Never rewritten: the agent's command is the one argument after `-c`.
      command: {
        argv: ["sh", "-c", body.command],
        cwd,
        env: { HOME: GUEST_HOME, PATH: GUEST_PATH, LANG: "C.UTF-8", ...GUEST_GIT_ENV, ...(msb ? {} : caBundleEnv()), ...(egress && !msb ? proxyEnv() : {}), ...(msb?.env ?? forwarding.env), ...body.env },
        timeoutMs,
      },
      proxyRules: msb ? [] : forwarding.proxyRules,
    };
  }

  /** Counts a refusal (anything that stopped a command or shell before it ran) and passes the error on. */
  function refused(error: unknown): never {
    metrics.refusals.inc({ reason: error instanceof DomainError ? error.errorCode.toLowerCase() : "internal" });
    throw error;
  }

  /** The VM's way out (if its policy allows any) must listen before its first connection. */
  async function openWayOut(prepared: PreparedExec, what: string): Promise<PreparedExec> {
    if (!prepared.spec.egressSocket) return prepared;
    proxies.setSecrets(prepared.spec.name, prepared.proxyRules);
    await proxies.ensure(prepared.spec.name, prepared.rootSessionID).catch((error: Error) => {
      throw new RuntimeFailedError(`the VM's egress proxy could not start, so ${what}: ${error.message}`);
    });
    return prepared;
  }

  /**
   * Runs an agent's command; resolves once it started in its VM, with its outcome to come. Rejects when
   * anything stopped it before it started (an ordinary error response, counted as a refusal).
   */
  async function start(sessionId: string, body: ExecBody, hooks: Omit<ExecHooks, "onStarted">): Promise<StartedExec> {
    const prepared = await prepare(sessionId, body)
      .then((ready) => openWayOut(ready, "the command was not run"))
      .catch(refused);
    const started = Promise.withResolvers<"started">();
    const outcome = runs
      .run(prepared, { ...hooks, onStarted: () => started.resolve("started") })
      .then((result) => ({ ok: true as const, result }), (error: unknown) => ({ ok: false as const, error }));
    const first = await Promise.race([started.promise, outcome]);
    if (first !== "started" && !first.ok) refused(first.error); // nothing ran
    return { prepared, outcome };
  }

  /** The shell starts in the session's own directory (checked against its mounts like any cwd). */
  async function prepareShell(sessionId: string, options: ShellOptions): Promise<PreparedExec> {
    const cwd = sessions.require(sessionId).directory;
    return shellOf(await prepare(sessionId, { command: "", cwd, timeoutMs: MAX_EXEC_TIMEOUT_MS }), options);
  }

  /**
   * Runs the operator's interactive shell (app/services/shell.ts); a failure before it started is counted
   * as a refusal. Resolves undefined, having run nothing, when the operator left while it was being prepared.
   */
  async function shell(sessionId: string, options: ShellOptions, hooks: ShellHooks): Promise<ExecOutcome | undefined> {
    const run = await prepareShell(sessionId, options)
      .then((prepared) => openWayOut(prepared, "the shell was not opened"))
      .catch(refused);
    if (hooks.signal.aborted) return undefined;
    let started = false;
    const onStarted = () => {
      started = true;
      hooks.onStarted(run.spec.name);
    };
    const { signal, onChunk, onTerminal } = hooks;
    return supervisor
      .exec({ rootSessionID: run.rootSessionID, spec: run.spec, command: run.command, signal, onStarted, onChunk, onTerminal })
      .catch((error: unknown) => (started ? Promise.reject(error) : refused(error)));
  }

  return { prepare, start, shell, cancel: runs.cancel };
}

export type ExecService = ReturnType<typeof createExecService>;
