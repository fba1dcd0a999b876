// SQL for host users with their own API token, and for which user owns each root session. Rows in, rows
// out; rules live in app/services/users.ts.
import type { Database } from "bun:sqlite";

export type UserRow = { name: string; uid: number; gid: number; tokenSha256: string; createdAt: number };

type RawUser = { name: string; uid: number; gid: number; token_sha256: string; created_at: number };

const fromRaw = (raw: RawUser): UserRow => ({ name: raw.name, uid: raw.uid, gid: raw.gid, tokenSha256: raw.token_sha256, createdAt: raw.created_at });

export function createUsersRepo(db: Database) {
  const all = db.query<RawUser, []>("SELECT name, uid, gid, token_sha256, created_at FROM users ORDER BY name");
  const byName = db.query<RawUser, [string]>("SELECT name, uid, gid, token_sha256, created_at FROM users WHERE name = ?");
  const insert = db.query("INSERT INTO users (name, uid, gid, token_sha256, created_at) VALUES ($name, $uid, $gid, $tokenSha256, $createdAt)");
  const remove = db.query<unknown, [string]>("DELETE FROM users WHERE name = ?");
  const ownerOf = db.query<{ uid: number }, [string]>("SELECT uid FROM session_owners WHERE root_session_id = ?");
  const setOwner = db.query<unknown, [string, number]>("INSERT INTO session_owners (root_session_id, uid) VALUES (?, ?)");
  const forget = db.query<unknown, [string]>("DELETE FROM session_owners WHERE root_session_id = ?");
  const rootsOf = db.query<{ root_session_id: string }, [number]>("SELECT root_session_id FROM session_owners WHERE uid = ?");

  return {
    list: (): UserRow[] => all.all().map(fromRaw),
    get: (name: string): UserRow | undefined => {
      const raw = byName.get(name);
      return raw ? fromRaw(raw) : undefined;
    },
    insert: (row: UserRow): void => void insert.run({ ...row }),
    remove: (name: string): void => void remove.run(name),
    /** The uid of the user who registered this root, or undefined (the manager's own token did, or no such root). */
    ownerOf: (rootSessionID: string): number | undefined => ownerOf.get(rootSessionID)?.uid,
    setOwner: (rootSessionID: string, uid: number): void => void setOwner.run(rootSessionID, uid),
    forget: (rootSessionIDs: string[]): void => {
      db.transaction(() => {
        for (const id of rootSessionIDs) forget.run(id);
      })();
    },
    rootsOf: (uid: number): string[] => rootsOf.all(uid).map((row) => row.root_session_id),
  };
}

export type UsersRepo = ReturnType<typeof createUsersRepo>;
