// A Dockerfile build's way out: the build VM reaches the network exactly as the session whose command started
// the build may, through an egress proxy of its own that reads that session's policy per connection (so a
// policy change applies to the build's next connection, and revocation cuts it like a session VM's). The
// tier says how its VM gets out (its spec part and the command env); builds carry no secrets, so the proxy
// swaps nothing in. RUN `apt-get install` or `npm ci` then work where the session's allow-list lets them.
import { egressSocketOf, type TierPart } from "../../runtime/driver";
import type { NetworkPolicy } from "../../egress/network-policy";
import type { Tier } from "../../runtime/tiers/index";
import type { EgressProxies } from "../services/egress-proxies";

/** The session a build runs for: its policy decides where RUN steps may connect. */
export type BuildSession = { rootSessionID: string; network: NetworkPolicy };

/** What the build VM's spec and its RUN steps get. */
export type BuildNetwork = { policy: NetworkPolicy; tierPart: TierPart; trustDir?: string; env: Record<string, string> };

export type BuildEgress = {
  /** Starts the build VM's proxy (when its policy lets it out at all) and says how the VM uses it. */
  open(vmName: string, session: BuildSession, baseRootfs: string): Promise<BuildNetwork>;
  /** Stops the proxy and removes its socket; nothing to do for a build without one. */
  close(vmName: string): Promise<void>;
};

export function createBuildEgress(deps: { tier: Tier; proxies: EgressProxies; caBundleFor: (image: string) => string }): BuildEgress {
  return {
    async open(vmName, session, baseRootfs) {
      const way = deps.tier.wayOut({
        network: session.network,
        forwarding: { env: {}, proxyRules: [] },
        egressSocket: () => deps.proxies.socketPathFor(vmName),
        trustDir: () => deps.caBundleFor(baseRootfs),
      });
      const network: BuildNetwork = { policy: session.network, tierPart: way.tierPart, env: way.env, ...(way.trustDir === undefined ? {} : { trustDir: way.trustDir }) };
      if (egressSocketOf({ tierPart: way.tierPart })) await deps.proxies.ensure(vmName, session.rootSessionID);
      return network;
    },
    close: (vmName) => deps.proxies.close(vmName),
  };
}
