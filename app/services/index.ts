// Wires the services over one database. Nothing here knows about HTTP.
import type { Tier } from "../../runtime/tiers/index";
import type { Database } from "bun:sqlite";
import { createSecretGrantsRepo } from "../db/secret-grants-repo";
import { createSessionsRepo } from "../db/sessions-repo";
import { createSessionSandboxRepo } from "../db/session-sandbox-repo";
import { createSettingsRepo } from "../db/settings-repo";
import { createVmStopsRepo } from "../db/vm-stops-repo";
import { createExecHistoryRepo } from "../db/exec-history-repo";
import { createExecHistory, EXEC_HISTORY_PER_ROOT } from "./exec-history";
import type { HostLimits } from "./host-limits";
import type { Notify } from "./lifecycle-events";
import type { ProtectedDirs } from "./mount-deny-list";
import type { SecretConfig } from "../secrets-config";
import { createSecretGrants } from "./secret-grants";
import { createSessionSandboxService } from "./session-sandbox";
import { createSessionsService } from "./sessions";
import type { IsolationChoice } from "../../runtime/isolation";
import { checkNetworkPolicy } from "./network-policy";
import { createSettingsService, type CheckIsolation, type EnvDefaults, type NormalizeImage } from "./settings";
import { normalizeImageChoice } from "../images/image-choice";
import { createUsersRepo } from "../db/users-repo";
import { createUsersService } from "./users";
import { createSessionAccess } from "./session-access";
import { createSessionActivity } from "./session-activity";
import type { PublishedEvent } from "../events/sandbox-event";

type ServiceDeps = {
  db: Database;
  host: HostLimits;
  envDefaults: EnvDefaults;
  now?: () => number;
  /** Told about deletions, toggles and settings that affect VMs (the supervisor listens). */
  notify?: Notify;
  /** Where the services' own events go (the manager's event bus): the sessions' activity. */
  publish?: (event: PublishedEvent) => void;
  /** The manager's own directories, which no session may mount. */
  protectedDirs?: ProtectedDirs;
  /** Free MiB where the runtime keeps volumes, when known: the ceiling of the diskMib setting. */
  diskFreeMib?: () => number | undefined;
  /** Checks an image choice against its grammar and what this manager's tiers boot (app/images/image-service.ts). */
  normalizeImage?: NormalizeImage;
  /** The secrets configured for the manager (SANDBOX_SECRETS): names, hosts and scope, which grants are checked against. */
  secrets?: readonly SecretConfig[];
  /** Refuses an explicit isolation tier that does not work on this host (settings and session overrides). */
  checkIsolation?: CheckIsolation;
  /** Refuses the docker setting where the tier an isolation choice runs in cannot hold a Docker Engine. */
  checkDocker?: CheckIsolation;
  /** The tier a session of this isolation choice runs in here: allowlists are also checked against what it can enforce. */
  networkTierFor?: (isolation: IsolationChoice) => Tier | undefined;
};

export function createServices({ db, host, envDefaults, now = Date.now, notify = () => undefined, publish = () => undefined, protectedDirs, diskFreeMib, normalizeImage = normalizeImageChoice, secrets = [], checkIsolation, checkDocker, networkTierFor = () => undefined }: ServiceDeps) {
  const sessionsRepo = createSessionsRepo(db);
  const vmStops = createVmStopsRepo(db);
  const settings = createSettingsService(createSettingsRepo(db), host, envDefaults, {
    notify,
    diskFreeMib,
    normalizeImage,
    checkIsolation,
    checkDocker,
    checkNetwork: (policy, isolation) => checkNetworkPolicy(policy, networkTierFor(isolation)),
  });
  const secretGrants = createSecretGrants(createSecretGrantsRepo(db), secrets, now);
  const execHistory = createExecHistory(createExecHistoryRepo(db, EXEC_HISTORY_PER_ROOT), now);
  const users = createUsersService(createUsersRepo(db), now);
  const activity = createSessionActivity({ now, publish, maxHoldMs: () => settings.get().maxHoldMinutes * 60_000 });
  const sessions = createSessionsService(sessionsRepo, settings, now, (event) => {
    if (event.type === "sessions-deleted") {
      activity.forget(event.sessionIds);
      vmStops.forget(event.sessionIds);
      secretGrants.forget(event.sessionIds);
      execHistory.forget(event.sessionIds);
      users.forget(event.sessionIds);
    }
    notify(event);
  }, protectedDirs);
  const sessionSandbox = createSessionSandboxService(secretGrants, sessionsRepo, createSessionSandboxRepo(db), sessions, settings, host, now, notify, normalizeImage, checkIsolation);
  const sessionAccess = createSessionAccess(sessions, users);
  return { host, settings, sessions, sessionSandbox, vmStops, secretGrants, execHistory, users, sessionAccess, activity };
}

export type Services = ReturnType<typeof createServices>;
