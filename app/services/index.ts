// Wires the services over one database. Nothing here knows about HTTP.
import type { Database } from "bun:sqlite";
import { createSessionsRepo } from "../db/sessions-repo";
import { createSettingsRepo } from "../db/settings-repo";
import type { HostLimits } from "./host-limits";
import { createSessionSandboxService } from "./session-sandbox";
import { createSessionsService } from "./sessions";
import { createSettingsService, type EnvDefaults } from "./settings";

export type ServiceDeps = {
  db: Database;
  host: HostLimits;
  envDefaults: EnvDefaults;
  now?: () => number;
};

export function createServices({ db, host, envDefaults, now = Date.now }: ServiceDeps) {
  const sessionsRepo = createSessionsRepo(db);
  const settings = createSettingsService(createSettingsRepo(db), host, envDefaults);
  const sessions = createSessionsService(sessionsRepo, settings, now);
  const sessionSandbox = createSessionSandboxService(sessionsRepo, sessions, settings, host, now);
  return { host, settings, sessions, sessionSandbox };
}

export type Services = ReturnType<typeof createServices>;
