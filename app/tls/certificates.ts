// Builds the manager CA's certificate and the leaf certificates it signs, with @peculiar/x509 on
// WebCrypto (ECDSA P-256, SHA-256). Nothing here touches the disk.
import { randomBytes } from "node:crypto";
import { isIP } from "node:net";
import * as x509 from "./x509";

const EC = { name: "ECDSA", namedCurve: "P-256" } as const;
const SIGNING = { ...EC, hash: "SHA-256" } as const;
const HOUR_MS = 60 * 60 * 1000;
/** Backdated so that a guest whose clock runs a little behind the host's still accepts a fresh certificate. */
const CLOCK_SKEW_MS = HOUR_MS;
const CA_VALIDITY_MS = 10 * 365 * 24 * HOUR_MS;
const LEAF_VALIDITY_MS = 24 * HOUR_MS;

/** 16 random bytes, positive (RFC 5280: at most 20 octets, non-negative, unique per CA). */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0]! & 0x7f) | 0x01;
  return bytes.toString("hex");
}

function pem(label: "PRIVATE KEY", der: ArrayBuffer): string {
  const body = Buffer.from(der).toString("base64").match(/.{1,64}/g)!.join("\n");
  return `-----BEGIN ${label}-----\n${body}\n-----END ${label}-----\n`;
}

async function exportKeyPem(key: CryptoKey): Promise<string> {
  return pem("PRIVATE KEY", await crypto.subtle.exportKey("pkcs8", key));
}

export async function importSigningKey(keyPem: string): Promise<CryptoKey> {
  const der = x509.PemConverter.decodeFirst(keyPem);
  return crypto.subtle.importKey("pkcs8", der, EC, false, ["sign"]);
}

/** A new CA: its own key, CA:true with pathlen 0 (it signs leaves only), keyCertSign, 10 years. */
export async function createCaPair(nowMs: number): Promise<{ keyPem: string; certPem: string }> {
  const keys = await crypto.subtle.generateKey(EC, true, ["sign", "verify"]);
  const shortId = randomBytes(4).toString("hex");
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(),
    name: `CN=session-sandbox manager CA ${shortId}, O=session-sandbox`,
    notBefore: new Date(nowMs - CLOCK_SKEW_MS),
    notAfter: new Date(nowMs + CA_VALIDITY_MS),
    signingAlgorithm: SIGNING,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { keyPem: await exportKeyPem(keys.privateKey), certPem: certificate.toString("pem") + "\n" };
}

export type CaSigner = { certificate: x509.X509Certificate; signingKey: CryptoKey };

/** A host as a leaf names it: lowercase, no trailing dot, IPv6 without brackets. Throws for anything else. */
export function normalizeLeafHost(host: string): string {
  const bare = host.trim().toLowerCase().replace(/^\[(.*)\]$/, "$1").replace(/\.$/, "");
  if (isIP(bare)) return bare;
  const label = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;
  if (bare.length > 253 || !bare.split(".").every((part) => label.test(part))) {
    throw new Error(`${JSON.stringify(host)} is not a DNS name or IP address a certificate can be made for`);
  }
  return bare;
}

/**
 * A leaf for one host: a fresh P-256 key, CN and SAN the host (an IP literal as an iPAddress SAN),
 * serverAuth, CA:false, valid `LEAF_VALIDITY_MS` (never past the CA's own end).
 */
export async function createLeaf(ca: CaSigner, host: string, nowMs: number): Promise<{ certPem: string; keyPem: string; notAfter: number }> {
  const keys = await crypto.subtle.generateKey(EC, true, ["sign", "verify"]);
  const notAfter = Math.min(nowMs + LEAF_VALIDITY_MS, ca.certificate.notAfter.getTime());
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: `CN=${host}`,
    issuer: ca.certificate.subject,
    notBefore: new Date(nowMs - CLOCK_SKEW_MS),
    notAfter: new Date(notAfter),
    signingAlgorithm: SIGNING,
    publicKey: keys.publicKey,
    signingKey: ca.signingKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([{ type: isIP(host) ? "ip" : "dns", value: host }]),
      await x509.AuthorityKeyIdentifierExtension.create(ca.certificate.publicKey),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  // x509's Date fields have whole seconds; report what the certificate says.
  return { certPem: certificate.toString("pem") + "\n", keyPem: await exportKeyPem(keys.privateKey), notAfter: certificate.notAfter.getTime() };
}
