// The manager's own CA: generated at first start in `<data dir>/ca/`, loaded on later starts, rotated on
// request; it signs short-lived leaf certificates for the egress proxy's TLS interception. Its private
// key stays on the host: VMs only get the certificate (see ca-bundles.ts).
import { caExists, caPaths, readCaPair, writeCaPair, ManagerCaError, type CaPaths, type CheckedPair } from "./ca-files";
import { createCaPair, createLeaf, importSigningKey, normalizeLeafHost, type CaSigner } from "./certificates";
import * as x509 from "./x509";

export { ManagerCaError } from "./ca-files";

export type LeafCertificate = { certPem: string; keyPem: string; notAfter: number };

export type ManagerCa = {
  /** The current CA certificate (PEM). */
  certPem(): string;
  /** sha256 fingerprint of the CA certificate, hex with colons (as openssl prints it). */
  fingerprint(): string;
  /** When the CA certificate expires (Unix epoch ms). */
  notAfter(): number;
  /**
   * A leaf for `host` (DNS name or IP literal: IP goes in an iPAddress SAN), signed by the CA, valid 24 h
   * (notBefore backdated 1 h for clock skew), cached per host until 1 h before it expires; concurrent
   * calls for one host share one mint. Each leaf has a fresh key.
   */
  leafFor(host: string): Promise<LeafCertificate>;
  /** A new CA (new key), replacing the files atomically; the leaf cache is dropped. */
  rotate(): Promise<void>;
};

type ManagerCaOptions = { now?: () => number };

/** A leaf is minted anew this long before it expires. */
const RENEW_BEFORE_MS = 60 * 60 * 1000;
/** Hosts with a cached leaf; past it the oldest entry goes (a `*.example.com` rule can name unbounded hosts). */
const MAX_CACHED_LEAVES = 1024;

/** One CA generation: its checked files, its WebCrypto signer (imported once, on first use) and its leaves. */
type Generation = { pair: CheckedPair; signer: () => Promise<CaSigner>; leaves: Map<string, Promise<LeafCertificate>> };

function generationOf(pair: CheckedPair): Generation {
  let signer: Promise<CaSigner> | undefined;
  return {
    pair,
    signer: () =>
      (signer ??= importSigningKey(pair.keyPem).then((signingKey) => ({ certificate: new x509.X509Certificate(pair.certPem), signingKey }))),
    leaves: new Map(),
  };
}

/**
 * Opens an existing CA, synchronously; its WebCrypto key is imported at the first leaf. Throws
 * ManagerCaError when there is no CA or it does not hold together. For callers that cannot await
 * (tests' app factory); the manager uses loadOrCreateManagerCa.
 */
export function openManagerCa(dataDir: string, options: ManagerCaOptions = {}): ManagerCa {
  const paths = caPaths(dataDir);
  if (!caExists(paths)) throw new ManagerCaError(`there is no manager CA in ${paths.dir}; start the manager once to generate it`);
  return managerCa(paths, generationOf(readCaPair(paths)), options.now ?? Date.now);
}

/** The manager's CA: created at first start, loaded (and checked, key included) on later starts. */
export async function loadOrCreateManagerCa(dataDir: string, options: ManagerCaOptions = {}): Promise<ManagerCa> {
  const paths = caPaths(dataDir);
  const now = options.now ?? Date.now;
  if (!caExists(paths)) writeCaPair(paths, await createCaPair(now()));
  const generation = generationOf(readCaPair(paths));
  // WebCrypto is stricter than node:crypto in places: a key it refuses is a startup error, not a failed leaf.
  await generation.signer().catch((error: Error) => {
    throw new ManagerCaError(`the manager CA's private key ${paths.key} cannot be used for signing (${error.message}); move ${paths.dir} aside to generate a new CA`);
  });
  return managerCa(paths, generation, now);
}

function managerCa(paths: CaPaths, initial: Generation, now: () => number): ManagerCa {
  let current = initial;
  let rotating: Promise<void> = Promise.resolve();

  async function mint(generation: Generation, host: string): Promise<LeafCertificate> {
    return createLeaf(await generation.signer(), host, now());
  }

  async function leafFor(host: string): Promise<LeafCertificate> {
    const name = normalizeLeafHost(host);
    const generation = current;
    const cached = generation.leaves.get(name);
    if (cached) {
      const leaf = await cached.catch(() => undefined);
      if (leaf && leaf.notAfter - RENEW_BEFORE_MS > now()) return leaf;
      // Another caller may already have replaced the entry with a fresh mint: share that one.
      if (generation.leaves.get(name) !== cached) return leafFor(host);
    }
    const minting = mint(generation, name);
    generation.leaves.delete(name); // re-inserted last: the map's order is the eviction order
    generation.leaves.set(name, minting);
    if (generation.leaves.size > MAX_CACHED_LEAVES) generation.leaves.delete(generation.leaves.keys().next().value!);
    minting.catch(() => {
      if (generation.leaves.get(name) === minting) generation.leaves.delete(name);
    });
    return minting;
  }

  return {
    certPem: () => current.pair.certPem,
    fingerprint: () => current.pair.certificate.fingerprint256,
    notAfter: () => current.pair.certificate.validToDate.getTime(),
    leafFor,
    rotate() {
      // One at a time: two rotations racing would write two pairs over each other.
      const next = rotating.then(async () => {
        writeCaPair(paths, await createCaPair(now()));
        current = generationOf(readCaPair(paths));
      });
      rotating = next.catch(() => undefined);
      return next;
    },
  };
}
