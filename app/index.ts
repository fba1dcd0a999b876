// createApp(deps): the whole HTTP surface, with no I/O of its own. main.ts and the tests provide deps.
import { Elysia } from "elysia";
import { bearerAuth } from "./http/auth";
import { userRoutes } from "./routes/users";
import { errorHandler } from "./http/error-handler";
import { openApiDocument } from "./http/openapi-document";
import type { Logger } from "./log";
import { healthRoutes, type RuntimeStatus } from "./routes/health";
import { sessionSandboxRoutes } from "./routes/session-sandbox";
import { sessionRoutes } from "./routes/sessions";
import { settingsRoutes } from "./routes/settings";
import { execRoutes } from "./routes/exec";
import { fileRoutes } from "./routes/files";
import type { FilesService } from "./services/files";
import { portRoutes } from "./routes/ports";
import { dockerRoutes } from "./routes/docker";
import { processRoutes } from "./routes/processes";
import { shellTicketRoutes } from "./routes/shell-tickets";
import { createShellTickets, type ShellTickets } from "./services/shell-tickets";
import type { PortsService } from "./services/ports";
import type { DockerService } from "./services/docker";
import { vmRoutes } from "./routes/vms";
import type { Services } from "./services";
import type { ExecService } from "./services/exec";
import { execHistoryRoutes } from "./routes/execs";
import type { Supervisor } from "./supervisor/supervisor";
import type { EventBus } from "./events/event-bus";
import type { Metrics } from "./metrics";
import { opsRoutes } from "./routes/ops";
import { imageRoutes } from "./routes/images";
import { secretRoutes } from "./routes/secrets";
import type { ImageService } from "./images/image-service";
import type { DoctorReport } from "./services/doctor";
import { caRoutes } from "./routes/ca";
import { shellRoutes } from "./routes/shell";
import { vmStatsRoutes } from "./routes/vm-stats";
import { dashboardRoutes } from "./routes/dashboard";
import type { VmStatsService } from "./services/vm-stats";
import type { ManagerCa } from "./tls/manager-ca";

const OPENAPI_JSON_PATH = "/api/openapi.json";

type AppDeps = {
  services: Services;
  execService: ExecService;
  files: FilesService;
  ports: PortsService;
  docker: DockerService;
  /** Tickets for the shell WebSocket; tests pass one with a short life. */
  shellTickets?: ShellTickets;
  maxUploadBytes?: number;
  supervisor: Supervisor;
  images: ImageService;
  token: string;
  log: Logger;
  version: string;
  runtimeStatus: () => RuntimeStatus;
  events: EventBus;
  metrics: Metrics;
  doctor: () => DoctorReport;
  ca: ManagerCa;
  vmStats: VmStatsService;
};

export function createApp({ services, execService, files, ports, docker, shellTickets = createShellTickets(), maxUploadBytes, supervisor, images, token, log, version, runtimeStatus, events, metrics, doctor, ca, vmStats }: AppDeps) {
  return (
    // normalize: false, so an unknown field is refused instead of silently dropped.
    new Elysia({ normalize: false })
      .use(errorHandler(log))
      .use(bearerAuth(token, { users: services.users, sessionAccess: services.sessionAccess }, shellTickets))
      .use(openApiDocument(OPENAPI_JSON_PATH, { title: "session-sandbox manager", version, description: "Sandbox VMs for OpenCode root sessions" }))
      .use(healthRoutes(version, services.host, runtimeStatus))
      .use(sessionRoutes(services))
      .use(sessionSandboxRoutes(services))
      .use(settingsRoutes(services))
      .use(secretRoutes(services))
      .use(execRoutes(execService))
      .use(fileRoutes(files, maxUploadBytes))
      .use(portRoutes(ports))
      .use(dockerRoutes(docker))
      .use(execHistoryRoutes(services, execService))
      .use(processRoutes(services, execService))
      .use(vmRoutes(supervisor, services.users))
      .use(userRoutes(services))
      .use(imageRoutes(images))
      .use(opsRoutes(events, metrics, doctor))
      .use(caRoutes(ca, log))
      .use(shellRoutes(execService))
      .use(shellTicketRoutes(services.sessions, shellTickets))
      .use(vmStatsRoutes(vmStats, services.users))
      .use(dashboardRoutes())
  );
}

export type App = ReturnType<typeof createApp>;
