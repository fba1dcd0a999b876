// What one proxied connection is handled with: the VM's policy, resolver, secrets and limits, and the
// proxy's TLS interception. Shared by the connection handler, the forwarder and the interceptor.
import type { Socket } from "node:net";
import type { EgressLogger as Logger } from "./logger";
import type { Policy } from "./policy";
import type { SecretDestinations } from "./secret-destinations";
import type { SecretRule } from "./secrets";
import type { Resolver } from "./upstream";

export type Interception = {
  /** A certificate for `host` signed by the CA every guest trusts (cached by the CA). */
  leafFor(host: string): Promise<{ certPem: string; keyPem: string }>;
  /** The roots an upstream's certificate is verified against: the host's store plus SANDBOX_EXTRA_CA_FILE. */
  upstreamRoots: readonly string[];
};

export type EgressLimits = {
  /** Request and response heads larger than this get 431 / 502. */
  maxHeadBytes: number;
  headTimeoutMs: number;
  resolveTimeoutMs: number;
  connectTimeoutMs: number;
  /** A tunnel or forward with no bytes either way for this long is closed. */
  idleTimeoutMs: number;
  /** After the response, unread guest bytes are drained this long before the socket is destroyed. */
  lingerMs: number;
  maxConnections: number;
  /** Allowed addresses tried in order before giving up. */
  maxConnectAttempts: number;
};

/**
 * A connection the proxy refused: what the guest asked for, the rule that refused it, why (the 403's
 * text), and for a target no entry names the one entry that would let it through.
 */
export type EgressDenial = { kind: "connect" | "http" | "intercept"; target: string; rule: string; reason: string; allowEntry?: string };

export type ConnectionContext = {
  policy: () => Policy;
  resolve: Resolver;
  secrets: () => readonly SecretRule[];
  hostAddresses: () => readonly string[];
  howToAllow: string;
  log: Logger;
  limits: EgressLimits;
  /** Registers an upstream socket so closing the proxy can destroy it. */
  track: (socket: Socket) => void;
  /** Logs a refusal and tells the proxy's owner (who says it on the command's stderr: a 403 alone does not). */
  denied: (denial: EgressDenial) => void;
  /** Told which secrets went out in a request, and to which host (names only; counted per session). */
  onSubstituted: (names: string[], host: string) => void;
  /**
   * TLS interception for CONNECTs to hosts that receive secrets. Without it such a CONNECT is refused:
   * an opaque tunnel would let the guest read a stored value back unredacted.
   */
  interception?: Interception;
  /** Where the hosts that receive secrets live (secret-destinations.ts): one per proxy. */
  secretDestinations: SecretDestinations;
};
