/** @jsxImportSource preact */
// Activity: the live event feed, and a session's recent commands from its exec history.
import { useState } from "preact/hooks";
import type { PageProps } from "./page-props";
import { ErrorText } from "../error-text";
import { when } from "../format";
import type * as Api from "../../../sdk/api-types";
import { useApi } from "../use-api";

/** The server's own shape (the SDK's type, generated from its OpenAPI document), not a copy. */
type Exec = Api.ExecHistoryEntry;

/** How a command ended, in the CLI's words: a cancelled or timed-out command's 137 is not its own exit code. */
export function outcomeOf(e: Exec): string {
  if (e.timedOut) return "timed out";
  if (e.cancelled) return "cancelled";
  if (e.oomKilled) return `killed at the memory limit (${e.exitCode})`;
  if (e.error) return `failed: ${e.error}`;
  if (e.exitCode !== null) return String(e.exitCode);
  return e.finishedAt === null ? "running" : "failed";
}

type FeedEntry = { key: string; type: string; at: number | null; session: string; text: string };

/** One event as a line: its time readable, its type, then its other fields (ids and times already shown are left out). */
function entryOf(message: { id?: string; event?: string; data: string }, index: number): FeedEntry {
  let fields: Record<string, unknown> = {};
  try {
    fields = JSON.parse(message.data) as Record<string, unknown>;
  } catch {
    return { key: message.id ?? `raw-${index}`, type: message.event ?? "message", at: null, session: "", text: message.data };
  }
  const text = Object.entries(fields)
    .filter(([key, value]) => value !== null && typeof value !== "object" && key !== "at" && key !== "id" && key !== "type")
    .map(([key, value]) => `${key}=${String(value)}`)
    .join(" ");
  const session = String(fields.rootSessionID ?? fields.sessionID ?? "");
  return { key: message.id ?? `gap-${index}`, type: String(fields.type ?? message.event ?? "message"), at: typeof fields.at === "number" ? fields.at : null, session, text };
}

export function ActivityPage({ tick, feed }: PageProps) {
  const sessions = useApi<{ sessions: { id: string }[] }>("/api/sessions", tick);
  const [session, setSession] = useState("");
  const execs = useApi<{ execs: Exec[] }>(session ? `/api/sessions/${encodeURIComponent(session)}/execs?limit=20` : null, tick);
  const [typeFilter, setTypeFilter] = useState("");
  const [sessionFilter, setSessionFilter] = useState("");
  const entries = feed.map(entryOf);
  const types = [...new Set(entries.map((e) => e.type))].sort();
  const shown = entries.filter((e) => (!typeFilter || e.type === typeFilter) && (!sessionFilter || e.session.includes(sessionFilter.trim())));
  return (
    <>
      <h2>Live events</h2>
      <p class="field">
        <label for="feed-type">Filter by type</label>
        <select id="feed-type" value={typeFilter} onChange={(e) => setTypeFilter((e.target as HTMLSelectElement).value)}>
          <option value="">all</option>
          {types.map((type) => (
            <option key={type} value={type}>
              {type}
            </option>
          ))}
        </select>
        <label for="feed-session">Filter by session</label>
        <input id="feed-session" type="search" value={sessionFilter} onInput={(e) => setSessionFilter((e.target as HTMLInputElement).value)} />
      </p>
      {/* Focusable: a keyboard must be able to scroll it (it scrolls on its own at narrow widths). */}
      <div class="feed" role="log" aria-label="Live events, newest first" tabIndex={0}>
        <ol>
        {shown.length === 0 && <li>{feed.length === 0 ? "No events yet." : "No event matches the filters."}</li>}
        {shown.map((entry) => (
          <li key={entry.key}>
            {entry.at !== null && <time dateTime={new Date(entry.at).toISOString()}>{when(entry.at)}</time>} <strong>{entry.type}</strong> {entry.text}
          </li>
        ))}
        </ol>
      </div>
      <h2>Recent commands</h2>
      <p class="field">
        <label for="exec-session">Session</label>
        <select id="exec-session" value={session} onChange={(e) => setSession((e.target as HTMLSelectElement).value)}>
          <option value="">Choose a session</option>
          {(sessions.data?.sessions ?? []).map((s) => (
            <option key={s.id} value={s.id}>
              {s.id}
            </option>
          ))}
        </select>
      </p>
      <ErrorText error={sessions.error ?? execs.error} />
      {execs.data && (
        <table>
          <thead>
            <tr>
              <th scope="col">Started</th>
              <th scope="col">Session</th>
              <th scope="col">Command</th>
              <th scope="col">Exit code</th>
              <th scope="col">Duration</th>
            </tr>
          </thead>
          <tbody>
            {execs.data.execs.map((e) => (
              <tr key={e.id}>
                <td data-label="Started">{when(e.startedAt)}</td>
                <td data-label="Session">{e.sessionID}</td>
                <td data-label="Command">
                  <code>{e.command}</code>
                </td>
                <td data-label="Exit code">{outcomeOf(e)}</td>
                <td data-label="Duration">{e.durationMs === null ? "—" : `${e.durationMs} ms`}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
