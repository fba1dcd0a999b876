// Turns an exec request into what the supervisor runs: the session's root, its VM spec, and the command
// as one argument to `sh -c`, byte for byte. Refuses (4xx) before anything runs anywhere.
import type { VmSpec } from "../../runtime/driver";
import type { ExecCommand } from "../../workers/protocol";
import { NotSandboxedError, RuntimeFailedError, SettingOutOfRangeError } from "../errors";
import { MANAGED_LABEL, ROOT_LABEL } from "../supervisor/vm-records";
import type { SecretRule } from "../../egress/index";
import type { Credentials } from "./credentials";
import { proxyEnv } from "./egress-proxies";
import type { ProtectedDirs } from "./mount-deny-list";
import { checkCwd, guardNewRepository, mountsOf, pinSessionMounts, restoreMissingGuards, verifyPinnedMounts } from "./mounts";
import type { SessionSandboxService } from "./session-sandbox";
import type { SessionsService } from "./sessions";
import type { SettingsService } from "./settings";
import type { ImageService } from "../images/image-service";
import { caBundleEnv } from "../tls/ca-bundles";
import { newId } from "../ids";

export type ExecBody = { command: string; cwd?: string; env?: Record<string, string>; timeoutMs?: number; callID?: string };

export type PreparedExec = {
  sessionId: string;
  rootSessionId: string;
  /** The caller's call id, or a new ULID: every command can be cancelled by its call id. */
  callID: string;
  spec: VmSpec;
  command: ExecCommand;
  /** Secret substitutions the VM's egress proxy applies for this command's session. */
  proxyRules: SecretRule[];
};

export const GUEST_HOME = "/home/agent";
const GUEST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
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
  /** Where each VM's egress proxy socket lives (network modes other than none). */
  egressSocketFor: (vmName: string) => string;
  /** Secrets and git credentials for the guest (placeholders) and its proxy (values). */
  credentials?: Credentials;
  /** The manager's own directories, which no session may mount. */
  protectedDirs: ProtectedDirs;
  /** The host path of the trust directory (manager CA, and it with the image's roots) of a VM booting `image`. */
  caBundleFor: (image: string) => string;
};

export function createExecService({ sessions, sessionSandbox, settings, images, sharedDirs, runtimeUnavailable, egressSocketFor, credentials, protectedDirs, caBundleFor }: ExecServiceDeps) {
  /** Pinned at the root's first command; every later one is checked against the pins, never re-resolved. */
  function pinnedMountsOf(rootId: string, directory: string) {
    const pinned = sessions.pinnedMounts(rootId);
    if (!pinned) return sessions.pinMounts(rootId, pinSessionMounts(directory, protectedDirs));
    verifyPinnedMounts(rootId, pinned);
    const updated = guardNewRepository(pinned) ?? restoreMissingGuards(pinned);
    return updated ? sessions.pinMounts(rootId, updated) : pinned;
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
    const root = sessions.require(view.rootSessionID);
    const pins = pinnedMountsOf(root.id, root.directory);
    const { mounts, roots } = mountsOf(pins, sharedDirs);
    // Without a cwd the command runs in the session's own directory.
    const cwd = checkCwd(body.cwd ?? sessions.require(sessionId).directory, roots);
    if (runtimeUnavailable) throw new RuntimeFailedError(`no sandbox runtime is usable, so the command was not run: ${runtimeUnavailable}`);
    const { execTimeoutMs, forwardGitCredentials, diskMib } = settings.get();
    const forwarding = credentials?.resolve(pins.top.path, forwardGitCredentials, view.secrets.effective) ?? { env: {}, proxyRules: [] };
    const timeoutMs = body.timeoutMs ?? execTimeoutMs;
    if (timeoutMs < 1 || timeoutMs > MAX_EXEC_TIMEOUT_MS) {
      throw new SettingOutOfRangeError(`timeoutMs ${timeoutMs} is out of range: it must be between 1 and ${MAX_EXEC_TIMEOUT_MS} ms`);
    }
    const { cpus, memoryMib } = view.resources.effective;
    const egress = view.network.effective.mode !== "none";
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
      labels: { [MANAGED_LABEL]: "1", [ROOT_LABEL]: view.rootSessionID },
      network: view.network.effective,
      ...(egress ? { egressSocket: egressSocketFor(view.vmName) } : {}),
      trustDir: bundleFor(image),
    };
    return {
      sessionId,
      rootSessionId: view.rootSessionID,
      callID: body.callID ?? newId(),
      spec,
      // Never rewritten: the agent's command is the one argument after `-c`.
      command: {
        argv: ["sh", "-c", body.command],
        cwd,
        env: { HOME: GUEST_HOME, PATH: GUEST_PATH, LANG: "C.UTF-8", ...GUEST_GIT_ENV, ...caBundleEnv(), ...(egress ? proxyEnv() : {}), ...forwarding.env, ...body.env },
        timeoutMs,
      },
      proxyRules: forwarding.proxyRules,
    };
  }

  return { prepare };
}

export type ExecService = ReturnType<typeof createExecService>;
