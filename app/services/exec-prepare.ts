// Turns a request into what the supervisor runs: the session's root, its VM spec and the command, or a
// refusal (4xx) before anything runs anywhere. The command is one argument to `sh -c`, byte for byte. The
// session's isolation tier decides its share of the VM (runtime/tiers/): how it gets out, what it trusts
// and how secrets reach it; this module never names a runtime.
import type { VmSpec } from "../../runtime/driver";
import { GUEST_HOME, GUEST_PATH } from "../../runtime/guest-layout";
import type { IsolationChoice } from "../../runtime/isolation";
import type { Tier } from "../../runtime/tiers/index";
import type { ExecCommand } from "../../workers/protocol";
import { NotSandboxedError, RuntimeFailedError, SettingOutOfRangeError } from "../errors";
import type { SecretRule } from "../../egress/index";
import type { ImageService } from "../images/image-service";
import { newId } from "../ids";
import type { Supervisor } from "../supervisor/supervisor";
import { vmLabelsFor } from "../vm-identity";
import type { Credentials } from "./credentials";
import type { ProtectedDirs } from "./mount-deny-list";
import { checkCwd, mountsOf, pinSessionMounts, verifyPinnedMounts } from "./mounts";
import type { SessionSandboxService } from "./session-sandbox";
import type { SessionsService } from "./sessions";
import type { SettingsService } from "./settings";
import { shellOf, type ShellOptions } from "./shell";
import type { UsersService } from "./users";

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
  /** What the history shows instead of the command: for the manager's own commands (files.ts). */
  historyLabel?: string;
  /** Neither in the history nor in the events: a forwarded port's connection (ports.ts), one per TCP connection. */
  quiet?: true;
};

/** Where a session's isolation choice runs here: its tier, or why none can. */
export type Placement = { tier: Tier; reason: string } | { tier: undefined; reason: string };

/**
 * Git in the guest trusts every directory: a worktree's read-only `.git` pointer file is mounted without
 * an id mapping (the container runtime cannot idmap a file), so it shows as owned by nobody, and git's ownership check
 * would refuse the worktree. Inside the VM every file is the guest's anyway; the check protects hosts.
 * Command-line scope (GIT_CONFIG_PARAMETERS), where git honours safe.directory.
 */
const GUEST_GIT_ENV = { GIT_CONFIG_PARAMETERS: "'safe.directory=*'" };
/** The longest a command may run (a day): a background one's default. */
export const MAX_EXEC_TIMEOUT_MS = 24 * 60 * 60 * 1000;

/** The design's /tmp size: min(512, max(1, floor(memoryMib / 4))) MiB. */
function tmpSizeMibFor(memoryMib: number): number {
  return Math.min(512, Math.max(1, Math.floor(memoryMib / 4)));
}

export type ExecPrepareDeps = {
  sessions: SessionsService;
  sessionSandbox: SessionSandboxService;
  settings: SettingsService;
  /** Turns a session's image choice into what its VM boots, building or pulling it first if needed. */
  images: Pick<ImageService, "bootImage">;
  /** Shared OpenCode directories mounted into every VM (tool output, skills, agent tmp). */
  sharedDirs: string[];
  /** Set when no runtime is usable: every command is refused with this reason. */
  runtimeUnavailable?: string;
  placeIsolation: (choice: IsolationChoice) => Placement;
  /** The host path of a VM's egress proxy socket (app/services/vm-egress.ts). */
  egressSocketFor: (vmName: string) => string;
  /** The host path of the trust directory (manager CA, and it with the image's roots) of a VM booting `image`. */
  caBundleFor: (image: string) => string;
  /** Starts the actor's Worker beside the checks; it boots nothing until a command is handed to it. */
  supervisor: Partial<Pick<Supervisor, "warm">>;
  /** Secrets and git credentials for the guest (placeholders) and its proxy (values). */
  credentials?: Credentials;
  /** The manager's own directories, which no session may mount. */
  protectedDirs: ProtectedDirs;
  /** Who owns a root, and whether they may mount a directory (docs/non-root.md); absent: every root is the manager's. */
  users?: Pick<UsersService, "ownerOf" | "ownerPrincipal" | "requireAccess">;
};

export function createExecPreparer(deps: ExecPrepareDeps) {
  const { sessions, sessionSandbox, settings, images, sharedDirs, runtimeUnavailable, placeIsolation, protectedDirs, credentials } = deps;

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

  function trustDirFor(image: string): string {
    try {
      return deps.caBundleFor(image);
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
    deps.supervisor.warm?.(view.vmName);
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
    // A root that asked for Docker itself never runs without the isolation that holds it; the settings'
    // default applies where the session's tier can hold it (docker start says why not elsewhere).
    if (view.docker.override === true && placement.tier.dockerRefusal) {
      throw new RuntimeFailedError(`the session's docker setting cannot be met in the ${placement.tier.name} tier, so the command was not run: ${placement.tier.dockerRefusal}; or switch docker off for it`);
    }
    if (runtimeUnavailable) throw new RuntimeFailedError(`no sandbox runtime is usable, so the command was not run: ${runtimeUnavailable}`);
    const { execTimeoutMs, forwardGitCredentials, diskMib } = settings.get();
    const forwarding = credentials?.resolve(pins.top.path, forwardGitCredentials, view.secrets.effective) ?? { env: {}, proxyRules: [] };
    const timeoutMs = body.timeoutMs ?? execTimeoutMs;
    if (timeoutMs < 1 || timeoutMs > MAX_EXEC_TIMEOUT_MS) {
      throw new SettingOutOfRangeError(`timeoutMs ${timeoutMs} is out of range: it must be between 1 and ${MAX_EXEC_TIMEOUT_MS} ms`);
    }
    const { cpus, memoryMib } = view.resources.effective;
    // A Dockerfile image is read from the repository the session works in (its top: the work tree's root),
    // and its FROM is pulled only from where the session's network policy reaches.
    const image = await images.bootImage(view.image.effective, { directory: pins.top.path, network: view.network.effective, rootSessionID: view.rootSessionID });
    const wayOut = placement.tier.wayOut({
      network: view.network.effective,
      forwarding,
      egressSocket: () => deps.egressSocketFor(view.vmName),
      trustDir: () => trustDirFor(image),
    });
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
      ...(wayOut.trustDir === undefined ? {} : { trustDir: wayOut.trustDir }),
      isolation: placement.tier.name,
      tierPart: wayOut.tierPart,
      // A tier that cannot hold a daemon never gets the flag (its refusal was dealt with above).
      ...(view.docker.effective && !placement.tier.dockerRefusal ? { docker: true } : {}),
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
        env: { HOME: GUEST_HOME, PATH: GUEST_PATH, LANG: "C.UTF-8", ...GUEST_GIT_ENV, ...wayOut.env, ...body.env },
        timeoutMs,
      },
      proxyRules: wayOut.proxyRules,
    };
  }

  /** The operator's shell: the session's own directory (checked against its mounts like any cwd), a PTY, the longest timeout. */
  async function prepareShell(sessionId: string, options: ShellOptions): Promise<PreparedExec> {
    const cwd = sessions.require(sessionId).directory;
    return shellOf(await prepare(sessionId, { command: "", cwd, timeoutMs: MAX_EXEC_TIMEOUT_MS }), options);
  }

  return { prepare, prepareShell };
}
