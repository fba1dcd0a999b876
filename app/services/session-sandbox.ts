// A session's sandbox mode and resources: read through the root, change only on a root.
import type { LineageStep, SessionSandboxRepo } from "../db/session-sandbox-repo";
import type { ModeSource, SessionsRepo } from "../db/sessions-repo";
import type { VmStop } from "../db/vm-stops-repo";
import { ChildSessionLockedError, SandboxDisabledError, SessionNotFoundError } from "../errors";
import type { HostLimits } from "./host-limits";
import type { Notify } from "./lifecycle-events";
import { MAX_SESSION_DEPTH, walkToRoot, type SessionsService } from "./sessions";
import type { NetworkPolicy } from "../../egress/network-policy";
import { checkResources, type CheckIsolation, type NormalizeImage, type SettingsService } from "./settings";
import type { IsolationChoice } from "../../runtime/isolation";
import type { ImageChoice } from "../images/image-choice";
import type { SecretGrants, SessionSecrets } from "./secret-grants";
import { vmNameFor } from "../vm-identity";

type Resources = { cpus: number; memoryMib: number };
type ResourceOverride = { cpus: number | null; memoryMib: number | null };

type SessionSandboxView = {
  /** Egress for the session's commands: the root's override, else the settings' default. */
  network: { override: NetworkPolicy | null; effective: NetworkPolicy };
  /** The guest image: the root's override, else the settings' default. A change recreates the VM, keeping its volume. */
  image: { override: ImageChoice | null; effective: ImageChoice };
  /** The isolation tier: the root's override, else the settings' default (auto = the strongest that works here). */
  isolation: { override: IsolationChoice | null; effective: IsolationChoice };
  /** A Docker Engine in the VM (docs/docker.md): the root's override, else the settings' default. */
  docker: { override: boolean | null; effective: boolean };
  /** Secret names granted to the root, and the configured secrets its commands get (scope "all" or granted). */
  secrets: SessionSecrets;
  sessionID: string;
  rootSessionID: string;
  /** Whether this session's commands run in a sandbox now: the root's mode, and sandboxing enabled. */
  sandboxed: boolean;
  source: ModeSource;
  serverEnabled: boolean;
  resources: { override: ResourceOverride | null; effective: Resources };
  toggledAt: number | null;
  vmName: string;
  /** The last time this root's VM stopped or was removed, and why; null if it never did. */
  lastStop: VmStop | null;
};

type SessionSandboxUpdate = {
  sandboxed?: boolean;
  resources?: { cpus?: number; memoryMib?: number } | null;
  /** null clears the override (the settings' default applies again). */
  network?: NetworkPolicy | null;
  /** null clears the override (the settings' default image applies again). */
  image?: ImageChoice | null;
  /** null clears the override (the settings' default isolation applies again). */
  isolation?: IsolationChoice | null;
  /** null clears the override (the settings' default docker applies again); off removes the daemon and its data. */
  docker?: boolean | null;
  /** The secret names granted to the root, replacing its grants ([] revokes them all). */
  secrets?: string[];
};

export function createSessionSandboxService(
  secretGrants: SecretGrants,
  repo: SessionsRepo,
  viewRepo: SessionSandboxRepo,
  sessions: SessionsService,
  settings: SettingsService,
  host: HostLimits,
  now: () => number,
  notify: Notify = () => undefined,
  normalizeImage: NormalizeImage = (choice) => choice,
  checkIsolation: CheckIsolation = () => undefined,
) {
  // The VM name is a SHA-256 of the root's id: worked out once per lineage read, not on every view of it.
  const vmNames = new WeakMap<readonly LineageStep[], string>();
  const vmNameOf = (lineage: readonly LineageStep[], rootSessionID: string) => {
    const known = vmNames.get(lineage);
    if (known !== undefined) return known;
    const name = vmNameFor(rootSessionID);
    vmNames.set(lineage, name);
    return name;
  };

  /** Every row the view needs in one read (see session-sandbox-repo.ts), walked by the same rules as rootOf. */
  function get(id: string): SessionSandboxView {
    const lineage = viewRepo.lineage(id, MAX_SESSION_DEPTH);
    const session = lineage[0]?.session;
    if (!session) throw new SessionNotFoundError(id);
    const { root, depth } = walkToRoot(session, (parentId, at) => (lineage[at]?.session.id === parentId ? lineage[at].session : undefined));
    const { grants, lastStop } = lineage[depth]!;
    const current = settings.get();
    const hasOverride = root.cpusOverride !== null || root.memoryMibOverride !== null;
    return {
      sessionID: session.id,
      rootSessionID: root.id,
      sandboxed: current.enabled && root.sandboxed,
      source: session.id === root.id ? root.modeSource : "inherited",
      serverEnabled: current.enabled,
      resources: {
        override: hasOverride ? { cpus: root.cpusOverride, memoryMib: root.memoryMibOverride } : null,
        effective: {
          cpus: root.cpusOverride ?? current.cpus,
          memoryMib: root.memoryMibOverride ?? current.memoryMib,
        },
      },
      network: {
        override: root.networkOverride === null ? null : (JSON.parse(root.networkOverride) as NetworkPolicy),
        effective: root.networkOverride === null ? current.network : (JSON.parse(root.networkOverride) as NetworkPolicy),
      },
      image: {
        override: root.imageOverride === null ? null : (JSON.parse(root.imageOverride) as ImageChoice),
        effective: root.imageOverride === null ? current.image : (JSON.parse(root.imageOverride) as ImageChoice),
      },
      isolation: { override: root.isolationOverride, effective: root.isolationOverride ?? current.isolation },
      docker: { override: root.dockerOverride, effective: root.dockerOverride ?? current.docker },
      secrets: secretGrants.withGrants([...grants]),
      toggledAt: root.toggledAt,
      vmName: vmNameOf(lineage, root.id),
      lastStop: lastStop && { ...lastStop },
    };
  }

  /** Applies a change to a root session. Checks run before any write, so a refusal changes nothing. */
  function update(id: string, change: SessionSandboxUpdate): SessionSandboxView {
    const session = sessions.require(id);
    if (!settings.get().enabled) throw new SandboxDisabledError();
    if (session.parentId !== null) throw new ChildSessionLockedError(id, sessions.rootOf(session).root.id);
    if (change.resources) checkResources(change.resources, host, "");
    // The grammar, and what the tier the session runs in can enforce (runtime/tiers/): either change can break it.
    if (change.network !== undefined || change.isolation !== undefined) {
      const current = get(id);
      const network = change.network === undefined ? current.network.effective : (change.network ?? settings.get().network);
      settings.checkNetwork(network, change.isolation === undefined ? current.isolation.effective : (change.isolation ?? settings.get().isolation));
    }
    if (change.secrets) secretGrants.check(change.secrets);
    if (change.isolation) checkIsolation(change.isolation);
    // Docker needs a tier that can hold it: turning it on, or moving a session that has it, can break that.
    if (change.docker !== undefined || change.isolation !== undefined) {
      const current = get(id);
      const docker = change.docker === undefined ? current.docker.effective : (change.docker ?? settings.get().docker);
      if (docker) settings.checkDocker(change.isolation === undefined ? current.isolation.effective : (change.isolation ?? settings.get().isolation));
    }
    const image = change.image ? normalizeImage(change.image) : change.image;
    const before = get(id);

    // The toggle time is when the mode last changed by choice: repeating the explicit choice a root already
    // has (`sandbox X on` when it is on) keeps it; a first explicit choice, even of the same mode, sets it.
    const explicit = change.sandboxed !== undefined;
    const toggled = explicit && (change.sandboxed !== session.sandboxed || session.modeSource !== "explicit");
    const resources = change.resources;
    repo.updateMode(id, {
      sandboxed: change.sandboxed ?? session.sandboxed,
      modeSource: explicit ? "explicit" : session.modeSource,
      toggledAt: toggled ? now() : session.toggledAt,
      cpusOverride: resources === null ? null : (resources?.cpus ?? session.cpusOverride),
      memoryMibOverride: resources === null ? null : (resources?.memoryMib ?? session.memoryMibOverride),
      networkOverride: change.network === undefined ? session.networkOverride : change.network === null ? null : JSON.stringify(change.network),
      imageOverride: image === undefined ? session.imageOverride : image === null ? null : JSON.stringify(image),
      isolationOverride: change.isolation === undefined ? session.isolationOverride : change.isolation,
      dockerOverride: change.docker === undefined ? session.dockerOverride : change.docker,
    });
    if (change.secrets) secretGrants.replace(id, change.secrets);
    const after = get(id);
    if (image) notify({ type: "image-chosen", choice: image });
    // Revocation cuts the VM's open connections: what was allowed before must not keep flowing.
    if (JSON.stringify(after.network.effective) !== JSON.stringify(before.network.effective)) notify({ type: "network-changed", rootSessionID: id });
    if (after.secrets.effective.join() !== before.secrets.effective.join()) notify({ type: "secrets-changed", rootSessionID: id });
    // Docker switched off: its daemon and data go from the VM, in the background (app/services/docker.ts).
    if (before.docker.effective && !after.docker.effective) notify({ type: "docker-off", rootSessionID: id });
    // The VM goes in the background: the toggle answers at once.
    if (change.sandboxed === false) notify({ type: "toggled-off", rootSessionID: id });
    if (after.sandboxed !== before.sandboxed) notify({ type: "sandbox-toggled", rootSessionID: id, sandboxed: after.sandboxed });
    return after;
  }

  return { get, update };
}

export type SessionSandboxService = ReturnType<typeof createSessionSandboxService>;
