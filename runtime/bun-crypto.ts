// SHA-256 and random hex for the runtime drivers, from Bun's built-in hasher and Web Crypto. Not node:crypto:
// each actor Worker that evaluates node:crypto pays for it in memory (docs/performance.md, "Manager memory per
// live actor"), and the drivers need nothing else from it.

/** The SHA-256 digest of `data` (a Buffer, so callers can read integers from it). */
export function sha256(data: string | Uint8Array): Buffer {
  return new Bun.CryptoHasher("sha256").update(data).digest();
}

export function sha256Hex(data: string | Uint8Array): string {
  return new Bun.CryptoHasher("sha256").update(data).digest("hex");
}

/** `bytes` random bytes as lowercase hex (2 × bytes characters). */
export function randomHex(bytes: number): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("hex");
}
