// A session's commands: GET /api/sessions/:id/execs (the exec history, newest first) and
// POST /api/sessions/:id/execs/:callID/cancel (cancel a running command by its call id).
import { Elysia, t } from "elysia";
import { ExecNotFoundError } from "../errors";
import { ExecCallParams, ExecHistoryEntry, ExecHistoryQuery, errors, SessionParams } from "../http/schemas";
import type { Services } from "../services";
import type { ExecService } from "../services/exec";

const DEFAULT_HISTORY_LIMIT = 50;

/**
 * Cancels the session root's running commands with this call id (their whole trees), once they ended
 * answering their history entries; a 404 when none runs. Also DELETE …/processes/:callID (processes.ts).
 */
export async function cancelByCallID(
  { sessions, execHistory }: Pick<Services, "sessions" | "execHistory">,
  execService: Pick<ExecService, "cancel">,
  params: { id: string; callID: string },
) {
  const { rootSessionID } = sessions.get(params.id);
  const ids = await execService.cancel(rootSessionID, params.callID);
  if (ids.length === 0) throw new ExecNotFoundError(params.id, params.callID);
  return { callID: params.callID, execs: execHistory.get(ids) };
}

export function execHistoryRoutes({ sessions, execHistory }: Services, execService: Pick<ExecService, "cancel">) {
  return new Elysia({ prefix: "/api/sessions/:id/execs", tags: ["exec"] })
    .get(
      "",
      ({ params, query }) => {
        const { rootSessionID } = sessions.get(params.id);
        return { execs: execHistory.list(rootSessionID, params.id, query.limit ?? DEFAULT_HISTORY_LIMIT) };
      },
      {
        params: SessionParams,
        query: ExecHistoryQuery,
        response: { 200: t.Object({ execs: t.Array(ExecHistoryEntry) }), ...errors(400, 401, 404, 409, 422) },
        detail: {
          operationId: "listExecs",
          summary:
            "The exec history, newest first: for a root session every command of its tree, for a child its own. The last 200 per root are kept; each with the last 4 KiB of its output",
        },
      },
    )
    .post(
      "/:callID/cancel",
      ({ params }) => cancelByCallID({ sessions, execHistory }, execService, params),
      {
        params: ExecCallParams,
        response: { 200: t.Object({ callID: t.String(), execs: t.Array(ExecHistoryEntry) }), ...errors(400, 401, 404, 409, 422) },
        detail: {
          operationId: "cancelExec",
          summary:
            "Cancel the running command(s) of the session's root with this call id; answers once they ended (at most 10 s), with their history entries. Its exec stream ends with cancelled: true",
        },
      },
    );
}
