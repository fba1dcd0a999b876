// Host users with a token of their own (docs/non-root.md). The manager runs as root; a user's OpenCode
// reaches it with that user's token, which lets it register and use its own sessions only, for directories
// that user can read, write and enter. Only a token's SHA-256 is kept: the token itself is shown once.
import { randomBytes } from "node:crypto";
import type { UsersRepo, UserRow } from "../db/users-repo";
import { AccountNotFoundError, DirectoryNotAccessibleError, UserExistsError, UserNotFoundError } from "../errors";

/** Who a request comes from: the manager's own token, or a user's. */
export type Principal = { kind: "admin" } | { kind: "user"; name: string; uid: number; gid: number };

type UserView = { name: string; uid: number; createdAt: number; sessions: number };

/** A login name as useradd accepts it (the manager passes it to getent, never to a shell). */
const NAME = /^[a-z_][a-z0-9_-]{0,31}$/;

const sha256 = (token: string) => new Bun.CryptoHasher("sha256").update(token).digest("hex");

/** The account's uid and gid from the host's user database (getent: /etc/passwd, LDAP, …). */
function lookupAccount(name: string): { uid: number; gid: number } {
  if (!NAME.test(name)) throw new AccountNotFoundError(name, "it is not a user name (lowercase letters, digits, _ and -, at most 32)");
  const result = Bun.spawnSync(["getent", "passwd", name], { stdout: "pipe", stderr: "ignore" });
  const fields = result.stdout.toString().trim().split(":");
  if (result.exitCode !== 0 || fields.length < 7) throw new AccountNotFoundError(name, "this host has no such account (getent passwd finds none)");
  const uid = Number(fields[2]);
  const gid = Number(fields[3]);
  if (uid === 0) throw new AccountNotFoundError(name, "it is root, which uses the manager's own token");
  return { uid, gid };
}

/** The primary gid of an account by uid, from the host's user database. */
function primaryGidOf(uid: number): number | undefined {
  const fields = Bun.spawnSync(["getent", "passwd", String(uid)], { stdout: "pipe", stderr: "ignore" }).stdout.toString().trim().split(":");
  return fields.length >= 7 ? Number(fields[3]) : undefined;
}

/** Whether the account can read, write and enter `path`, asked as that account (its groups and ACLs count). */
function accountCanUse(principal: { uid: number; gid: number }, path: string): boolean {
  const argv = ["setpriv", `--reuid=${principal.uid}`, `--regid=${principal.gid}`, "--init-groups", "--", "test", "-r", path, "-a", "-w", path, "-a", "-x", path];
  return Bun.spawnSync(argv, { stdout: "ignore", stderr: "ignore" }).exitCode === 0;
}

export function createUsersService(repo: UsersRepo, now: () => number) {
  /** Token hash → user, in memory: every request of a user's token looks it up. */
  let byToken = new Map<string, UserRow>();
  const reload = () => (byToken = new Map(repo.list().map((row) => [row.tokenSha256, row])));
  reload();

  return {
    /** The user a presented token belongs to, or undefined. */
    authenticate(token: string): Principal | undefined {
      const row = byToken.get(sha256(token));
      return row ? { kind: "user", name: row.name, uid: row.uid, gid: row.gid } : undefined;
    },

    /** Gives an account of this host a token; answers it once. */
    add(name: string): { name: string; uid: number; token: string } {
      if (repo.get(name)) throw new UserExistsError(name);
      const { uid, gid } = lookupAccount(name);
      const token = `ssu_${randomBytes(32).toString("base64url")}`;
      repo.insert({ name, uid, gid, tokenSha256: sha256(token), createdAt: now() });
      reload();
      return { name, uid, token };
    },

    list(): UserView[] {
      return repo.list().map((row) => ({ name: row.name, uid: row.uid, createdAt: row.createdAt, sessions: repo.rootsOf(row.uid).length }));
    },

    /** Takes the user's token away at once; its sessions stay until deleted (by the manager's token). */
    remove(name: string): void {
      if (!repo.get(name)) throw new UserNotFoundError(name);
      repo.remove(name);
      reload();
    },

    /** The uid that owns a root session, undefined when the manager's own token registered it. */
    ownerOf: (rootSessionID: string): number | undefined => repo.ownerOf(rootSessionID),
    /** The user who owns a root session, as a principal (also after their token was removed), or undefined. */
    ownerPrincipal(rootSessionID: string): Principal | undefined {
      const uid = repo.ownerOf(rootSessionID);
      if (uid === undefined) return undefined;
      const row = repo.list().find((user) => user.uid === uid);
      return row ? { kind: "user", name: row.name, uid, gid: row.gid } : { kind: "user", name: `uid ${uid}`, uid, gid: primaryGidOf(uid) ?? uid };
    },
    setOwner: (rootSessionID: string, uid: number): void => repo.setOwner(rootSessionID, uid),
    forget: (rootSessionIDs: string[]): void => repo.forget(rootSessionIDs),
    rootsOf: (uid: number): string[] => repo.rootsOf(uid),

    /** Refuses a directory the user could not use itself (DirectoryNotAccessibleError). */
    requireAccess(principal: Principal, path: string): void {
      if (principal.kind === "user" && !accountCanUse(principal, path)) throw new DirectoryNotAccessibleError(principal.name, path);
    },
  };
}

export type UsersService = ReturnType<typeof createUsersService>;
