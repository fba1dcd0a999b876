// Opens the manager's SQLite database: WAL, full fsync, integrity check, and migrations.
// A corrupt or newer database stops startup; it is never recreated or wiped.
import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { MIGRATIONS, type Migration } from "./migrations";

export class DatabaseStartupError extends Error {}

const DATABASE_FILE = "manager.sqlite";

export function databasePath(dataDir: string): string {
  return join(dataDir, DATABASE_FILE);
}

export function openDatabase(dataDir: string, migrations: readonly Migration[] = MIGRATIONS): Database {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = databasePath(dataDir);
  let db: Database;
  try {
    db = new Database(path, { create: true, strict: true });
    checkIntegrity(db, path);
  } catch (error) {
    if (error instanceof DatabaseStartupError) throw error;
    throw corrupt(path, error);
  }
  db.run("PRAGMA journal_mode = WAL");
  // FULL: an acknowledged write survives power loss too, not only a process crash. Writes are rare.
  db.run("PRAGMA synchronous = FULL");
  db.run("PRAGMA busy_timeout = 5000");
  migrate(db, path, migrations);
  return db;
}

/**
 * Runs `write` without waiting for the disk: the write survives a crash of the manager (kill -9: WAL frames
 * reach the OS before the call returns) and leaves the database consistent, but the last such writes may be
 * lost with a power loss. For logs on the path of every command (the exec history), where an fsync per write
 * would show in every command's time (docs/performance.md, "exec `true`"). Everything else keeps FULL.
 */
export function withoutFsync<T>(db: Database, write: () => T): T {
  db.run("PRAGMA synchronous = NORMAL");
  try {
    return write();
  } finally {
    db.run("PRAGMA synchronous = FULL");
  }
}

function checkIntegrity(db: Database, path: string): void {
  const rows = db.query<{ quick_check: string }, []>("PRAGMA quick_check").all();
  const problems = rows.map((row) => row.quick_check).filter((line) => line !== "ok");
  if (problems.length > 0) throw corrupt(path, new Error(problems.slice(0, 3).join("; ")));
}

function corrupt(path: string, cause: unknown): DatabaseStartupError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new DatabaseStartupError(
    `the database ${path} is unreadable or corrupt (${reason}). The manager will not recreate it: ` +
      `restore it from a backup, or move it aside to start empty.`,
  );
}

function migrate(db: Database, path: string, migrations: readonly Migration[]): void {
  const current = db.query<{ user_version: number }, []>("PRAGMA user_version").get()!.user_version;
  const latest = migrations.at(-1)?.version ?? 0;
  if (current > latest) {
    throw new DatabaseStartupError(
      `the database ${path} has schema version ${current}, newer than this manager understands (${latest}). ` +
        `Upgrade the manager, or point SANDBOX_DATA_DIR at another directory.`,
    );
  }
  for (const migration of migrations) {
    if (migration.version <= current) continue;
    db.transaction(() => {
      db.run(migration.sql);
      db.run(`PRAGMA user_version = ${migration.version}`);
    })();
  }
}
