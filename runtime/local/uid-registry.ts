// The host-wide registry of VM uid ranges, shared by every manager on the host. Each claimed range is one
// file named after its first host uid, created atomically (link(2) of a finished temp file, which fails
// with EEXIST if anyone holds it) and recording its owner: the claiming state dir and volume. Claims kept
// per runtime dir let two managers on different runtime dirs hand out the same host uids, so files one
// VM writes would belong to another manager's VM. A driver only ever frees its own claims.
//
// Where: /var/lib/session-sandbox, the one fixed place every manager on a host agrees on (the default
// runtime dirs live there too). The parent of a runtime dir would not do: SANDBOX_RUNTIME_DIR may point
// anywhere, and /run would forget claims at reboot while volumes (and their files' owners) persist.
import { randomHex } from "../bun-crypto";
import { existsSync, linkSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

export const DEFAULT_UID_REGISTRY_DIR = "/var/lib/session-sandbox/uid-ranges";

/** Who holds a range: the state dir (real path) of the driver that claimed it, and the volume it is for. */
type UidClaim = { stateDir: string; volume: string };

export class UidRegistry {
  private readonly owner: string;

  /** `stateDir` is whose claims this instance makes and frees. */
  constructor(readonly dir: string, stateDir: string) {
    this.owner = canonical(stateDir);
  }

  /** Claims the range starting at `firstUid` for `volume`; false if anyone holds it already. */
  claim(volume: string, firstUid: number): boolean {
    const file = join(this.dir, String(firstUid));
    if (existsSync(file)) return false; // a fast path only: link() below decides
    this.ensureDir();
    this.removeDeadTemps();
    const temp = join(this.dir, `.claim-${process.pid}-${randomHex(6)}`);
    writeFileSync(temp, JSON.stringify({ stateDir: this.owner, volume } satisfies UidClaim), { mode: 0o600, flag: "wx" });
    try {
      linkSync(temp, file);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
      throw error;
    } finally {
      rmSync(temp, { force: true });
    }
  }

  /** Whether this state dir holds the range starting at `firstUid` for `volume`. */
  holds(volume: string, firstUid: number): boolean {
    const holder = this.holder(firstUid);
    return holder?.stateDir === this.owner && holder.volume === volume;
  }

  /** Frees the range if this state dir holds it for `volume`; anyone else's claim is left alone. */
  release(volume: string, firstUid: number): void {
    if (this.holds(volume, firstUid)) rmSync(join(this.dir, String(firstUid)), { force: true });
  }

  /** Who holds the range starting at `firstUid`, if anyone (or an unreadable claim: `undefined` too). */
  holder(firstUid: number): UidClaim | undefined {
    try {
      const claim = JSON.parse(readFileSync(join(this.dir, String(firstUid)), "utf8")) as UidClaim;
      return typeof claim.stateDir === "string" && typeof claim.volume === "string" ? claim : undefined;
    } catch {
      return undefined;
    }
  }

  /** The ranges this state dir holds. */
  ownClaims(): { firstUid: number; volume: string }[] {
    if (!existsSync(this.dir)) return [];
    return readdirSync(this.dir)
      .filter((name) => /^\d+$/.test(name))
      .map((name) => ({ firstUid: Number(name), claim: this.holder(Number(name)) }))
      .filter(({ claim }) => claim?.stateDir === this.owner)
      .map(({ firstUid, claim }) => ({ firstUid, volume: claim!.volume }));
  }

  /** A process killed between writing its temp file and removing it (kill -9) leaves `.claim-<pid>-…`. */
  private removeDeadTemps(): void {
    for (const name of readdirSync(this.dir)) {
      const pid = Number(/^\.claim-(\d+)-/.exec(name)?.[1]);
      if (!pid || pid === process.pid || isAlive(pid)) continue;
      rmSync(join(this.dir, name), { force: true });
    }
  }

  private ensureDir(): void {
    // The parent keeps the default mode: runtime dirs under it must stay traversable by VM uids.
    mkdirSync(dirname(this.dir), { recursive: true });
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
  }
}

/** One spelling per directory, so the same state dir reached through a symlink owns the same claims. */
function canonical(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return resolve(dir);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"; // alive, but not ours to signal
  }
}
