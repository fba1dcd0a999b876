import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { DatabaseStartupError, databasePath, openDatabase, withoutFsync } from "../app/db/open";
import { MIGRATIONS } from "../app/db/migrations";
import { makeTempDir } from "./helpers";

const LATEST_SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

function withDir(run: (dir: string) => void) {
  const dir = makeTempDir("ss-db-");
  try {
    run(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("database", () => {
  test("open → WAL mode and the latest schema", () =>
    withDir((dir) => {
      const db = openDatabase(dir);
      expect(db.query<{ journal_mode: string }, []>("PRAGMA journal_mode").get()!.journal_mode).toBe("wal");
      expect(db.query<{ user_version: number }, []>("PRAGMA user_version").get()!.user_version).toBe(LATEST_SCHEMA_VERSION);
      db.close();
    }));

  test("writes are FULL-synchronous; withoutFsync relaxes only its own write, also when it throws", () =>
    withDir((dir) => {
      const db = openDatabase(dir);
      const level = () => db.query<{ synchronous: number }, []>("PRAGMA synchronous").get()!.synchronous;
      expect(level()).toBe(2);
      expect(withoutFsync(db, level)).toBe(1);
      expect(level()).toBe(2);
      expect(() => withoutFsync(db, () => db.run("INSERT INTO no_such_table VALUES (1)"))).toThrow();
      expect(level()).toBe(2);
      db.close();
    }));

  test("an older database upgrades in place and keeps its rows", () =>
    withDir((dir) => {
      const old = openDatabase(dir, MIGRATIONS.slice(0, 1));
      old.run("INSERT INTO sessions (id, directory, created_at, sandboxed, mode_source) VALUES ('ses_old', '/r', 1, 1, 'default')");
      old.close();
      const db = openDatabase(dir);
      expect(db.query("SELECT id FROM sessions").all()).toEqual([{ id: "ses_old" }]);
      expect(db.query<{ user_version: number }, []>("PRAGMA user_version").get()!.user_version).toBe(LATEST_SCHEMA_VERSION);
      db.close();
    }));

  test("a database from a newer manager → startup error, file untouched", () =>
    withDir((dir) => {
      openDatabase(dir).close();
      const raw = new Database(databasePath(dir));
      raw.run(`PRAGMA user_version = ${LATEST_SCHEMA_VERSION + 5}`);
      raw.close();
      const before = readFileSync(databasePath(dir));
      const error = (() => {
        try {
          openDatabase(dir);
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(DatabaseStartupError);
      expect((error as Error).message).toMatch(/newer than this manager understands.*Upgrade the manager/);
      expect(readFileSync(databasePath(dir)).equals(before)).toBe(true);
    }));

  test("a corrupt database → startup error naming the fix, never recreated", () =>
    withDir((dir) => {
      const junk = Buffer.from("this is not a sqlite database, just junk bytes ".repeat(200));
      writeFileSync(databasePath(dir), junk);
      expect(() => openDatabase(dir)).toThrow(DatabaseStartupError);
      expect(() => openDatabase(dir)).toThrow(/corrupt.*will not recreate it/);
      expect(readFileSync(databasePath(dir)).equals(junk)).toBe(true);
    }));

  test("a damaged page inside a real database → startup error", () =>
    withDir((dir) => {
      const db = openDatabase(dir);
      for (let i = 0; i < 200; i++) db.run("INSERT INTO settings (key, value) VALUES (?, ?)", [`k${i}`, "x".repeat(200)]);
      db.run("PRAGMA wal_checkpoint(TRUNCATE)");
      db.close();
      const bytes = readFileSync(databasePath(dir));
      bytes.fill(0x5a, 4096 + 100, 4096 * 3); // overwrite the middle of pages 2 and 3
      writeFileSync(databasePath(dir), bytes);
      expect(() => openDatabase(dir)).toThrow(DatabaseStartupError);
    }));
});
