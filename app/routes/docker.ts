// POST /api/sessions/:id/docker/start: a Docker Engine in the session's VM, started on demand
// (app/services/docker.ts). A child session names its root's VM.
import { Elysia, t } from "elysia";
import { errors, SessionParams } from "../http/schemas";
import type { DockerService } from "../services/docker";

const DockerStarted = t.Object({ version: t.String({ description: "The daemon's version, as `docker version` shows its server" }) });

export function dockerRoutes(docker: Pick<DockerService, "start">) {
  return new Elysia({ tags: ["docker"] }).post("/api/sessions/:id/docker/start", ({ params, request }) => docker.start(params.id, request.signal), {
    params: SessionParams,
    response: { 200: DockerStarted, ...errors(400, 401, 404, 409, 422) },
    detail: {
      operationId: "startDocker",
      summary:
        "Start the session's Docker Engine (its docker setting on, a tier that holds one) and wait until it answers, up to 180 s; idempotent. The guest can run `sandbox-docker start|status|log|stop` itself",
    },
  });
}
