// The CA files each VM trusts (its VmSpec.trustDir): a bundle of the manager CA and the operator's private
// CAs (SANDBOX_EXTRA_CA_FILE) followed by the public roots of its image, and those CAs without the image's
// roots (for NODE_EXTRA_CA_CERTS, which adds to Node's own); one directory per distinct content under
// `<runtime dir>/ca-bundles/` (readable by the VMs' uids, like the egress dir). The image's store is
// hostile input for pulled images: resolved only inside the image, a regular file of bounded size, and
// copied as bytes — never parsed on the host.
import { createHash, randomBytes } from "node:crypto";
import { closeSync, constants, existsSync, fstatSync, mkdirSync, openSync, readdirSync, readSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { GUEST_SYSTEM_CA_BUNDLE, TRUST_BUNDLE_FILE, TRUST_MANAGER_CA_FILE } from "../../runtime/driver";
import { resolveFileInRoot } from "../../runtime/local/rootfs";
import type { ManagerCa } from "./manager-ca";

/**
 * Larger than any real store many times over, small enough that a hostile image cannot make the manager read gigabytes.
 * Exported so a test builds stores at and past it.
 */
export const MAX_SYSTEM_STORE_BYTES = 4 * 1024 * 1024;

/**
 * The image's system store as bytes, or undefined when it has none usable (missing, not a file, too large).
 * Exported so the tests give it hostile images directly.
 */
export function readSystemStore(root: string): Buffer | undefined {
  const guestPath = resolveFileInRoot(root, GUEST_SYSTEM_CA_BUNDLE);
  if (!guestPath) return undefined;
  let fd: number;
  try {
    // O_NOFOLLOW: the resolved path has no symlink left; O_NONBLOCK: a FIFO swapped in cannot hang the open.
    fd = openSync(join(root, guestPath), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile() || stats.size > MAX_SYSTEM_STORE_BYTES) return undefined;
    const buffer = Buffer.alloc(stats.size);
    let read = 0;
    while (read < buffer.length) {
      const n = readSync(fd, buffer, read, buffer.length - read, read);
      if (n === 0) break;
      read += n;
    }
    return buffer.subarray(0, read);
  } finally {
    closeSync(fd);
  }
}

type CaBundles = {
  /** The host path of the trust directory for a VM booting `image` (written if needed). */
  forImage(image: string): string;
  /** Removes every trust directory; called once at start, before any VM needs one (each is rewritten on use). */
  removeAll(): string[];
};

type CaBundlesOptions = {
  /** Where the trust directories live: traversable and readable by the VMs' uids. */
  dir: string;
  ca: ManagerCa;
  /** PEM CA certificates the operator's config adds (checked by upstream-roots.ts); none by default. */
  extraCas?: readonly string[];
  /**
   * Where the roots for `image` are read: the image's own root directory (a rootfs image), or `/` (an OCI
   * image its runtime pulls and boots itself, so the host's store stands in for the image's).
   */
  storeRootFor(image: string): string;
};

export function createCaBundles({ dir, ca, extraCas = [], storeRootFor }: CaBundlesOptions): CaBundles {
  /** By image, CA fingerprint and the store file's identity, so neither a rotation nor a rebuilt image is missed. */
  const written = new Map<string, string>();

  function storeIdentity(root: string): string {
    try {
      const stats = statSync(join(root, resolveFileInRoot(root, GUEST_SYSTEM_CA_BUNDLE) ?? "/nonexistent"));
      return `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeMs}`;
    } catch {
      return "none";
    }
  }

  /** A new content gets a new directory, never a rewrite: a running VM keeps what it mounted. */
  function write(bundle: Buffer, ownCas: string): string {
    mkdirSync(dir, { recursive: true, mode: 0o711 });
    const path = join(dir, createHash("sha256").update(bundle).digest("hex").slice(0, 32));
    if (existsSync(join(path, TRUST_BUNDLE_FILE))) return path;
    const temp = `${path}.tmp-${randomBytes(6).toString("hex")}`;
    mkdirSync(temp, { mode: 0o755 });
    writeFileSync(join(temp, TRUST_BUNDLE_FILE), bundle, { mode: 0o644 });
    writeFileSync(join(temp, TRUST_MANAGER_CA_FILE), ownCas, { mode: 0o644 });
    try {
      renameSync(temp, path);
    } catch (error) {
      rmSync(temp, { recursive: true, force: true });
      if (!existsSync(join(path, TRUST_BUNDLE_FILE))) throw error;
    }
    return path;
  }

  return {
    forImage(image) {
      const root = storeRootFor(image);
      const key = `${image}\0${ca.fingerprint()}\0${storeIdentity(root)}`;
      const known = written.get(key);
      if (known) return known;
      const store = readSystemStore(root);
      // The manager CA first, then the operator's: the CAs of this installation, then the image's public roots.
      const ownCas = [ca.certPem(), ...extraCas].map((pem) => (pem.endsWith("\n") ? pem : `${pem}\n`)).join("");
      const path = write(Buffer.concat([Buffer.from(ownCas), ...(store ? [Buffer.from("\n"), store, Buffer.from("\n")] : [])]), ownCas);
      written.set(key, path);
      return path;
    },
    removeAll() {
      let names: string[];
      try {
        names = readdirSync(dir);
      } catch {
        return [];
      }
      for (const name of names) rmSync(join(dir, name), { recursive: true, force: true });
      written.clear();
      return names;
    },
  };
}
