// What a human may choose as a VM's image, and the checks that make a bad choice a 400 before anything
// is built or pulled: the built-in recipe plus extra Debian packages, or an OCI image reference.
import { createHash } from "node:crypto";
import { ImageInvalidError } from "../errors";
import { DEFAULT_DOCKERFILE } from "./dockerfile";

/**
 * `recipe`: the built-in guest image (scripts/build-rootfs.sh) plus `packages` from Debian.
 * `oci`: an image from a registry, e.g. `127.0.0.1:5000/team/node:22` or `debian:bookworm-slim`.
 * `dockerfile`: built from the session's repository's Dockerfile at `path` (dockerfile-build.ts), inside a
 * sandbox VM, and cached by the content digest of the Dockerfile and what it copies.
 */
export type ImageChoice = { kind: "recipe"; packages: string[] } | { kind: "oci"; reference: string } | { kind: "dockerfile"; path: string };

export const DEFAULT_IMAGE: ImageChoice = { kind: "recipe", packages: [] };
const MAX_EXTRA_PACKAGES = 64;

// Debian policy 5.6.1: lower case letters, digits, + - . ; at least two characters, starting alphanumeric.
const DEBIAN_PACKAGE = /^[a-z0-9][a-z0-9+.-]+$/;

// The reference grammar of distribution/reference (the one docker, skopeo and registries share):
//   name [":" tag] ["@" digest], name = [domain "/"] path-component ("/" path-component)*
const DOMAIN_COMPONENT = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
const DOMAIN = `(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[0-9a-fA-F:]+\\])(?::[0-9]+)?`;
const PATH_COMPONENT = "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*";
const TAG = "[\\w][\\w.-]{0,127}";
const DIGEST = "sha256:[a-f0-9]{64}";
const REFERENCE = new RegExp(`^(?:(${DOMAIN})/)?(${PATH_COMPONENT}(?:/${PATH_COMPONENT})*)(?::(${TAG}))?(?:@(${DIGEST}))?$`);
const MAX_NAME_LENGTH = 255;

export type ParsedReference = { domain: string; path: string; tag: string | undefined; digest: string | undefined };

/**
 * Parses and normalizes a reference the way docker does: no domain means Docker Hub (`docker.io`, with
 * `library/` for a one-component name), and neither tag nor digest means `:latest`. Throws a 400 naming it.
 */
export function parseReference(reference: string): ParsedReference {
  const match = REFERENCE.exec(reference);
  if (!match) {
    throw new ImageInvalidError(
      `image reference ${JSON.stringify(reference)} is not a valid OCI reference: use [registry[:port]/]name[:tag][@sha256:<digest>], e.g. 127.0.0.1:5000/team/node:22 or debian:bookworm-slim`,
    );
  }
  let [, first, rest, tag, digest] = match;
  // distribution/reference: the first component is a registry only if it has a dot or a port, or is localhost.
  let domain = first;
  let path = rest!;
  if (domain !== undefined && !/[.:[]/.test(domain) && domain !== "localhost" && domain.toLowerCase() === domain) {
    path = `${domain}/${path}`;
    domain = undefined;
  }
  if (domain === undefined) {
    domain = "docker.io";
    if (!path.includes("/")) path = `library/${path}`;
  }
  if (`${domain}/${path}`.length > MAX_NAME_LENGTH) throw new ImageInvalidError(`image reference ${JSON.stringify(reference)} is longer than ${MAX_NAME_LENGTH} characters`);
  return { domain, path, tag: tag ?? (digest ? undefined : "latest"), digest };
}

function formatReference(parsed: ParsedReference): string {
  return `${parsed.domain}/${parsed.path}${parsed.tag ? `:${parsed.tag}` : ""}${parsed.digest ? `@${parsed.digest}` : ""}`;
}

/**
 * Registries on loopback are spoken to over plain HTTP, as docker does by default for 127.0.0.0/8: a
 * registry the operator runs on this host. Every other registry must present a valid TLS certificate.
 */
export function isLoopbackRegistry(domain: string): boolean {
  const host = domain.startsWith("[") ? domain.slice(0, domain.indexOf("]") + 1) : domain.split(":")[0]!;
  return host === "localhost" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host) || host === "[::1]";
}

/** Checks a choice and returns it normalized (packages sorted and unique, reference fully qualified). Throws a 400. */
export function normalizeImageChoice(choice: ImageChoice): ImageChoice {
  if (choice.kind === "dockerfile") return { kind: "dockerfile", path: normalizeDockerfilePath(choice.path) };
  if (choice.kind === "oci") return { kind: "oci", reference: formatReference(parseReference(choice.reference)) };
  const packages = [...new Set(choice.packages)].sort();
  if (packages.length > MAX_EXTRA_PACKAGES) throw new ImageInvalidError(`at most ${MAX_EXTRA_PACKAGES} extra packages may be added to the built-in image, got ${packages.length}`);
  const bad = packages.find((name) => !DEBIAN_PACKAGE.test(name));
  if (bad !== undefined) {
    throw new ImageInvalidError(`${JSON.stringify(bad)} is not a Debian package name: use lower-case letters, digits, '+', '-' and '.', starting with a letter or digit (e.g. postgresql-client)`);
  }
  return { kind: "recipe", packages };
}

/** A Dockerfile's place in the repository: relative, inside it; default DEFAULT_DOCKERFILE. Throws a 400. */
function normalizeDockerfilePath(path: string | undefined): string {
  const given = path?.trim() || DEFAULT_DOCKERFILE;
  const parts = given.split("/").filter((part) => part !== "" && part !== ".");
  if (given.startsWith("/") || parts.includes("..") || parts.length === 0) {
    throw new ImageInvalidError(`Dockerfile path ${JSON.stringify(given)} must be relative to the repository and stay inside it, e.g. ${DEFAULT_DOCKERFILE}`);
  }
  return parts.join("/");
}

/** The stable identity of what was asked: equal choices share one cache entry. Expects a normalized choice. */
export function sourceKeyOf(choice: ImageChoice): string {
  if (choice.kind === "oci") return `oci:${choice.reference}`;
  if (choice.kind === "dockerfile") return `dockerfile:${choice.path}`;
  return choice.packages.length === 0 ? "default" : `recipe:${choice.packages.join(",")}`;
}

/** One line for people: `default`, `default + jq, htop` or the reference. */
export function describeImage(choice: ImageChoice): string {
  if (choice.kind === "oci") return choice.reference;
  if (choice.kind === "dockerfile") return `the repository's ${choice.path}`;
  return choice.packages.length === 0 ? "default" : `default + ${choice.packages.join(", ")}`;
}

/** The cache directory name of a recipe build: the packages and the apt sources they come from. */
export function recipeDirKey(packages: string[], baseRootfs: string, aptSources: string): string {
  const hash = createHash("sha256").update(JSON.stringify({ packages, baseRootfs, aptSources })).digest("hex");
  return `recipe-${hash.slice(0, 16)}`;
}

/** The cache directory name of a pulled image: its manifest digest. */
export function digestDirKey(digest: string): string {
  return digest.replace(":", "-");
}
