// Whether a Dockerfile's FROM may be pulled for a session: the repository, which the guest writes, names
// the registry, and the host's skopeo then connects to it. So the pull goes only where the session's own
// network policy would let the guest go (the egress policy's evaluator, with the registry's addresses):
// a guest cannot make the host fetch from a place it could not reach itself.
import { lookup } from "node:dns/promises";
import { evaluate, type NetworkPolicy } from "../../egress/index";
import { ImageInvalidError } from "../errors";
import { isLoopbackRegistry, type ParsedReference } from "./image-choice";

/** Where skopeo connects for a reference's registry: Docker Hub's API host, and 80 or 443 by default. */
function registryTarget(parsed: ParsedReference): { host: string; port: number } {
  if (parsed.domain === "docker.io") return { host: "registry-1.docker.io", port: 443 };
  const bracketed = parsed.domain.startsWith("[");
  const host = bracketed ? parsed.domain.slice(1, parsed.domain.indexOf("]")) : parsed.domain.split(":")[0]!;
  const portText = bracketed ? parsed.domain.slice(parsed.domain.indexOf("]") + 2) : parsed.domain.split(":")[1];
  return { host: host.toLowerCase(), port: portText ? Number(portText) : isLoopbackRegistry(parsed.domain) ? 80 : 443 };
}

async function addressesOf(host: string): Promise<string[]> {
  try {
    return (await lookup(host, { all: true })).map((entry) => entry.address);
  } catch {
    return [];
  }
}

/** Throws a 400 naming the rule when the session's policy does not reach the FROM image's registry. */
export async function checkFromRegistry(parsed: ParsedReference, policy: NetworkPolicy): Promise<void> {
  const target = registryTarget(parsed);
  const { decision } = evaluate(policy, target, await addressesOf(target.host));
  if (!decision.allowed) {
    throw new ImageInvalidError(
      `the Dockerfile's image ${parsed.domain}/${parsed.path} (FROM or COPY --from) is pulled only from where this session may connect, and its network policy does not reach ${target.host}:${target.port} (${decision.reason}): allow the registry in the session's network policy, or use an image from an allowed one`,
    );
  }
}
