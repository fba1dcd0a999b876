// The embedded tiers, container (crun) and gvisor (runsc): a VM has no route out of its own. Its
// 127.0.0.1:3128 is forwarded to the host-side egress proxy's socket, which applies the policy and swaps
// secret values in; it trusts the manager CA through a mounted trust directory.
import { GUEST_CA_BUNDLE, GUEST_MANAGER_CA } from "../driver";
import { GUEST_PROXY_PORT } from "../local/oci-config";
import type { RuntimeName } from "../select";
import type { Tier } from "./tier";

/** Where the guest reaches the host proxy: the forwarder inside every embedded VM listens there. */
const GUEST_PROXY_URL = `http://127.0.0.1:${GUEST_PROXY_PORT}`;

/**
 * The variables common tools read for their trust store, each naming the VM's bundle.
 * Exported so a test checks each inside a VM.
 */
export const CA_ENV_NAMES = ["SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO", "CURL_CA_BUNDLE"] as const;

/**
 * Each names a whole store (the bundle), except NODE_EXTRA_CA_CERTS: Node adds that file to its own
 * roots, and parses it at every start, TLS or not; the whole bundle would slow every `node` start, so it
 * gets the manager CA alone.
 * Exported so a test checks the mapping.
 */
export function caBundleEnv(): Record<string, string> {
  return Object.fromEntries(CA_ENV_NAMES.map((name) => [name, name === "NODE_EXTRA_CA_CERTS" ? GUEST_MANAGER_CA : GUEST_CA_BUNDLE]));
}

/** Every proxy variable tools read, upper and lower case, pointing at the host proxy; loopback stays direct. */
function proxyEnv(): Record<string, string> {
  const env: Record<string, string> = { NO_PROXY: "localhost,127.0.0.1,::1", no_proxy: "localhost,127.0.0.1,::1" };
  for (const name of ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"]) env[name] = GUEST_PROXY_URL;
  return env;
}

/**
 * Why the container tier runs no Docker Engine: it shares the host's kernel, and a daemon needs mounts and
 * nested namespaces, the shared kernel's largest attack surface, which that tier refuses by design. The
 * gVisor tier holds one: a docker VM's daemon gets them from gVisor's own kernel (gvisor/docker-profile.ts).
 */
const CONTAINER_DOCKER_REFUSAL =
  "the container tier shares the host's kernel, and a Docker Engine needs mounts and nested namespaces, which that tier refuses by design; set isolation to gvisor (the daemon then runs on gVisor's own kernel), or microvm on a KVM host, or build the image you need from a Dockerfile (image kind dockerfile)";

export function embeddedTier(name: "container" | "gvisor", runtime: RuntimeName): Tier {
  return {
    name,
    runtime,
    imageFamily: "rootfs",
    needsKvm: false,
    ...(name === "container" ? { dockerRefusal: CONTAINER_DOCKER_REFUSAL } : {}),
    // The host proxy enforces every entry of the allow-list grammar.
    networkProblems: () => [],
    wayOut({ network, forwarding, egressSocket, trustDir }) {
      const egress = network.mode !== "none";
      return {
        tierPart: { kind: "embedded", ...(egress ? { egressSocket: egressSocket() } : {}) },
        trustDir: trustDir(),
        env: { ...caBundleEnv(), ...(egress ? proxyEnv() : {}), ...forwarding.env },
        proxyRules: forwarding.proxyRules,
      };
    },
  };
}
