// The manager CA on disk: `<data dir>/ca/` (0700) holding `ca.key` (PKCS#8 PEM, 0600) and `ca.crt`.
// A pair is replaced so that a crash at any point leaves either the old pair or the new one, never half
// a key or a key without its certificate; reading checks the pair with node:crypto, synchronously.
import { createPrivateKey, randomBytes, X509Certificate, type KeyObject } from "node:crypto";
import { chmodSync, closeSync, existsSync, fsyncSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";

const CA_DIR = "ca";
const CA_KEY_FILE = "ca.key";
const CA_CERT_FILE = "ca.crt";
const NEW = ".new";
const TEMP_MARK = ".tmp-";

/** Thrown at startup when the CA cannot be read or does not hold together; the message names the file and the fix. */
export class ManagerCaError extends Error {}

export type CaPaths = { dir: string; key: string; cert: string };

export function caPaths(dataDir: string): CaPaths {
  const dir = join(dataDir, CA_DIR);
  return { dir, key: join(dir, CA_KEY_FILE), cert: join(dir, CA_CERT_FILE) };
}

export type CaPair = { keyPem: string; certPem: string };
/** A pair read back and checked: the parsed certificate and key, for fingerprints and dates. */
export type CheckedPair = CaPair & { certificate: X509Certificate; key: KeyObject };

function fsyncDir(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Temp file, fsync, rename: the path holds the old content or all of the new, whatever happens. */
function writeFileAtomic(path: string, content: string, mode: number): void {
  const temp = `${path}${TEMP_MARK}${randomBytes(6).toString("hex")}`;
  const fd = openSync(temp, "wx", mode);
  try {
    try {
      writeSync(fd, content);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

/**
 * Replaces (or first writes) the pair. Both files are written whole as `*.new` first; then the key is
 * renamed into place, then the certificate. readCaPair finishes a rename cut short by a crash and drops
 * a pair that was never renamed, so the two files always match.
 */
export function writeCaPair(paths: CaPaths, pair: CaPair): void {
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  writeFileAtomic(paths.key + NEW, pair.keyPem, 0o600);
  writeFileAtomic(paths.cert + NEW, pair.certPem, 0o644);
  fsyncDir(paths.dir);
  renameSync(paths.key + NEW, paths.key);
  fsyncDir(paths.dir);
  renameSync(paths.cert + NEW, paths.cert);
  fsyncDir(paths.dir);
}

/** Settles what a crash during writeCaPair left: temp files go, a renamed key gets its certificate. */
function settleInterruptedWrite(paths: CaPaths): void {
  for (const name of readdirSync(paths.dir)) if (name.includes(TEMP_MARK)) rmSync(join(paths.dir, name), { force: true });
  if (existsSync(paths.key + NEW)) {
    // Cut before the key was renamed: the old pair (if any) is intact; the new one never happened.
    rmSync(paths.key + NEW, { force: true });
    rmSync(paths.cert + NEW, { force: true });
  } else if (existsSync(paths.cert + NEW)) {
    renameSync(paths.cert + NEW, paths.cert);
    fsyncDir(paths.dir);
  }
}

function fixFor(paths: CaPaths): string {
  return (
    `the manager never replaces a CA it cannot read. Restore ${paths.dir} from a backup, or move it aside ` +
    `(mv ${paths.dir} ${paths.dir}.broken) and start again: a new CA is generated, as \`bun run ca rotate\` does ` +
    `on a running manager, and every VM trusts it from its next command`
  );
}

function readPem(path: string, what: string, paths: CaPaths): string {
  try {
    const stats = lstatSync(path);
    if (!stats.isFile()) throw new Error("it is not a regular file");
    return readFileSync(path, "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === "ENOENT" ? "it is missing" : (error as Error).message;
    throw new ManagerCaError(`the manager CA's ${what} ${path} cannot be read (${reason}); ${fixFor(paths)}`);
  }
}

/** Whether a CA exists at all (a fresh data dir has none), after settling an interrupted write. */
export function caExists(paths: CaPaths): boolean {
  if (!existsSync(paths.dir)) return false;
  if (!lstatSync(paths.dir).isDirectory()) throw new ManagerCaError(`${paths.dir} is not a directory; ${fixFor(paths)}`);
  settleInterruptedWrite(paths);
  return existsSync(paths.key) || existsSync(paths.cert);
}

/** Reads and checks the pair: an EC P-256 key, a CA certificate, and the two belonging together. */
export function readCaPair(paths: CaPaths): CheckedPair {
  // Tighten what someone loosened by hand, as for the API token: the key is a credential.
  if ((lstatSync(paths.dir).mode & 0o077) !== 0) chmodSync(paths.dir, 0o700);
  const keyPem = readPem(paths.key, "private key", paths);
  const certPem = readPem(paths.cert, "certificate", paths);
  if ((lstatSync(paths.key).mode & 0o077) !== 0) chmodSync(paths.key, 0o600);
  let key: KeyObject;
  try {
    key = createPrivateKey(keyPem);
  } catch (error) {
    throw new ManagerCaError(`the manager CA's private key ${paths.key} is corrupt (${(error as Error).message}); ${fixFor(paths)}`);
  }
  if (key.asymmetricKeyType !== "ec" || key.asymmetricKeyDetails?.namedCurve !== "prime256v1") {
    throw new ManagerCaError(`the manager CA's private key ${paths.key} is not an ECDSA P-256 key; ${fixFor(paths)}`);
  }
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(certPem);
  } catch (error) {
    throw new ManagerCaError(`the manager CA's certificate ${paths.cert} is corrupt (${(error as Error).message}); ${fixFor(paths)}`);
  }
  if (!certificate.ca) throw new ManagerCaError(`the manager CA's certificate ${paths.cert} is not a CA certificate; ${fixFor(paths)}`);
  if (!certificate.checkPrivateKey(key)) {
    throw new ManagerCaError(`the manager CA's certificate ${paths.cert} does not belong to its private key ${paths.key}; ${fixFor(paths)}`);
  }
  return { keyPem, certPem, certificate, key };
}
