// The certificates an intercepted tunnel's upstream is verified against: the host's own trust store
// (Debian's ca-certificates bundle, so the host's updates and additions apply) plus the operator's
// private CAs from SANDBOX_EXTRA_CA_FILE. Read once at start; a bad extra file stops the start. The
// private CAs alone also go to every VM (ca-bundles.ts): the guest verifies the upstreams it tunnels to
// itself, and behind a TLS-inspecting proxy those are signed by the same private CA.
import { readFileSync } from "node:fs";
import { X509Certificate } from "node:crypto";

/** Where Debian, Ubuntu and Alpine keep the system bundle; the first one that exists is used. */
const SYSTEM_BUNDLES = ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"];
const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

export class UpstreamRootsError extends Error {}

function pemBlocks(text: string): string[] {
  return text.match(PEM_BLOCK) ?? [];
}

/** The host's roots and the extra CAs, one PEM certificate per entry. Throws UpstreamRootsError for a bad extra file. */
export function loadUpstreamRoots(extraCaFile: string | undefined, systemBundles: readonly string[] = SYSTEM_BUNDLES): { roots: string[]; extra: string[]; source: string } {
  let system: string[] = [];
  let source = "no system bundle found";
  for (const path of systemBundles) {
    try {
      system = pemBlocks(readFileSync(path, "utf8"));
      source = `${path} (${system.length} certificates)`;
      break;
    } catch {
      // try the next location
    }
  }
  if (extraCaFile === undefined) return { roots: system, extra: [], source };
  let text: string;
  try {
    text = readFileSync(extraCaFile, "utf8");
  } catch (error) {
    throw new UpstreamRootsError(`SANDBOX_EXTRA_CA_FILE=${extraCaFile} cannot be read (${(error as { code?: string }).code ?? (error as Error).message}): give a readable PEM file of CA certificates, or unset it`);
  }
  const extra = pemBlocks(text);
  if (extra.length === 0) throw new UpstreamRootsError(`SANDBOX_EXTRA_CA_FILE=${extraCaFile} holds no PEM certificate (-----BEGIN CERTIFICATE-----): give the CA certificate in PEM form`);
  for (const pem of extra) {
    try {
      new X509Certificate(pem);
    } catch (error) {
      throw new UpstreamRootsError(`SANDBOX_EXTRA_CA_FILE=${extraCaFile} holds a certificate that cannot be parsed (${(error as Error).message}): check the file`);
    }
  }
  return { roots: [...system, ...extra], extra, source: `${source} + ${extra.length} from ${extraCaFile}` };
}
