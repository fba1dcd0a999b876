// SQL for the settings table: one JSON value per explicitly set key.
import type { Database } from "bun:sqlite";

export function createSettingsRepo(db: Database) {
  const all = db.query<{ key: string; value: string }, []>("SELECT key, value FROM settings");
  const upsert = db.query<unknown, [string, string]>(
    "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
  );
  const remove = db.query<unknown, [string]>("DELETE FROM settings WHERE key = ?");

  return {
    readAll(): Record<string, unknown> {
      return Object.fromEntries(all.all().map((row) => [row.key, JSON.parse(row.value)]));
    },
    /** Writes every entry in one transaction; `null` removes the key so the default applies again. */
    write(entries: Record<string, unknown>): void {
      db.transaction(() => {
        for (const [key, value] of Object.entries(entries)) {
          if (value === null) remove.run(key);
          else upsert.run(key, JSON.stringify(value));
        }
      })();
    },
  };
}

export type SettingsRepo = ReturnType<typeof createSettingsRepo>;
