// SQL for secret_grants: which secret names a human granted to each root session (names only, never values).
import type { Database } from "bun:sqlite";

export function createSecretGrantsRepo(db: Database) {
  const byRoot = db.query<{ name: string }, [string]>("SELECT name FROM secret_grants WHERE root_session_id = ? ORDER BY name");
  const removeAll = db.query<unknown, [string]>("DELETE FROM secret_grants WHERE root_session_id = ?");
  const insert = db.query<unknown, [string, string, number]>("INSERT INTO secret_grants (root_session_id, name, granted_at) VALUES (?, ?, ?)");
  return {
    list(rootSessionId: string): string[] {
      return byRoot.all(rootSessionId).map((row) => row.name);
    },
    /** The root's grants become exactly `names`, in one transaction. */
    replace(rootSessionId: string, names: readonly string[], at: number): void {
      db.transaction(() => {
        removeAll.run(rootSessionId);
        for (const name of new Set(names)) insert.run(rootSessionId, name, at);
      })();
    },
    forget(rootSessionIds: readonly string[]): void {
      for (const id of rootSessionIds) removeAll.run(id);
    },
  };
}

export type SecretGrantsRepo = ReturnType<typeof createSecretGrantsRepo>;
