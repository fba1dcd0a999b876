// SQL for secret_grants: which secret names a human granted to each root session (names only, never values).
// They are read with the rest of a session's view, in app/db/session-sandbox-repo.ts.
import type { Database } from "bun:sqlite";

export function createSecretGrantsRepo(db: Database) {
  const removeAll = db.query<unknown, [string]>("DELETE FROM secret_grants WHERE root_session_id = ?");
  const insert = db.query<unknown, [string, string, number]>("INSERT INTO secret_grants (root_session_id, name, granted_at) VALUES (?, ?, ?)");
  return {
    /** The root's grants become exactly `names`, in one transaction. */
    replace(rootSessionID: string, names: readonly string[], at: number): void {
      db.transaction(() => {
        removeAll.run(rootSessionID);
        for (const name of new Set(names)) insert.run(rootSessionID, name, at);
      })();
    },
    forget(rootSessionIDs: readonly string[]): void {
      for (const id of rootSessionIDs) removeAll.run(id);
    },
  };
}

export type SecretGrantsRepo = ReturnType<typeof createSecretGrantsRepo>;
