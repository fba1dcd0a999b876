// startEgressProxy: the listener on the Unix socket, the connection cap, and shutdown.
import { lstatSync, unlinkSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { networkInterfaces } from "node:os";
import type { EgressLogger as Logger } from "./logger";
import { endGracefully } from "./graceful-close";
import { SecretDestinations } from "./secret-destinations";
import type { EgressDenial, EgressLimits, Interception } from "./connection-context";
import { handleConnection } from "./handle-connection";
import type { Policy } from "./policy";
import { plainResponse } from "./proxy-responses";
import type { SecretRule } from "./secrets";
import { systemResolver, type Resolver } from "./upstream";

export type EgressProxyOptions = {
  socketPath: string;
  /** Read once per connection, so a policy change applies to the next connection. */
  policy: () => Policy;
  /** Name → addresses. Default: the system resolver (getaddrinfo). Called at most once per connection. */
  resolve?: Resolver;
  /** Read once per plain-HTTP request. Unusable rules are skipped with a warning naming the secret. */
  secrets?: () => readonly SecretRule[];
  /** Told the names of the secrets put into a request that went out, and its target host (never a value). */
  onSubstituted?: (names: string[], host: string) => void;
  /** Told every connection it refused, after the log line. */
  onDenied?: (denial: EgressDenial) => void;
  log: Logger;
  /** The host's own addresses, for the `host` keyword. Default: every local interface address. */
  hostAddresses?: () => readonly string[];
  /** The last line of every 403 body: how a user changes the policy. */
  howToAllow?: string;
  limits?: Partial<EgressLimits>;
  /** TLS interception for CONNECTs to hosts that receive secrets; without it those CONNECTs are refused. */
  interception?: Interception;
};

export type EgressProxy = {
  readonly socketPath: string;
  /** Destroys every open connection (tunnels included) and keeps listening; returns how many guest connections were cut. */
  dropConnections(reason: string): number;
  close(): Promise<void>;
};

export const DEFAULT_LIMITS: EgressLimits = {
  maxHeadBytes: 64 * 1024,
  headTimeoutMs: 30_000,
  resolveTimeoutMs: 10_000,
  connectTimeoutMs: 10_000,
  idleTimeoutMs: 300_000,
  lingerMs: 2_000,
  maxConnections: 256,
  maxConnectAttempts: 4,
};

export const DEFAULT_HOW_TO_ALLOW = 'to allow it, change the session\'s network policy: PUT /api/session-sandbox/:id {"network": {"mode": "allowlist", "allow": [...]}}';

function interfaceAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address));
}

/** A leftover socket from a crashed run is replaced; any other file at the path is an error. */
function clearStaleSocket(socketPath: string): void {
  try {
    if (!lstatSync(socketPath).isSocket()) throw new Error(`${socketPath} exists and is not a socket; refusing to replace it`);
    unlinkSync(socketPath);
  } catch (error) {
    if ((error as { code?: string }).code !== "ENOENT") throw error;
  }
}

export async function startEgressProxy(options: EgressProxyOptions): Promise<EgressProxy> {
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  };
  let clients = 0;
  const { onSubstituted, onDenied } = options;
  const resolver = options.resolve ?? systemResolver;
  const ctx = {
    policy: options.policy,
    resolve: resolver,
    secretDestinations: new SecretDestinations(resolver, limits.resolveTimeoutMs),
    secrets: options.secrets ?? (() => []),
    // A failing listener must not fail the guest's request: the count is a report, not a gate.
    onSubstituted: (names: string[], host: string) => {
      try {
        onSubstituted?.(names, host);
      } catch (error) {
        options.log.error("egress substitution listener failed", { error: (error as Error).message });
      }
    },
    denied: (denial: EgressDenial) => {
      options.log.info("egress denied", { kind: denial.kind, target: denial.target, rule: denial.rule });
      try {
        onDenied?.(denial);
      } catch (error) {
        options.log.error("egress denial listener failed", { error: (error as Error).message });
      }
    },
    hostAddresses: options.hostAddresses ?? interfaceAddresses,
    howToAllow: options.howToAllow ?? DEFAULT_HOW_TO_ALLOW,
    log: options.log,
    limits,
    track,
    interception: options.interception,
  };
  // allowHalfOpen: a guest that half-closes after its request must still get the answer.
  const guests = new Set<Socket>();
  const server = createServer({ allowHalfOpen: true }, (client) => {
    track(client);
    guests.add(client);
    client.once("close", () => guests.delete(client));
    if (clients >= limits.maxConnections) {
      client.on("error", () => client.destroy());
      endGracefully(client, limits.lingerMs, plainResponse(503, `session-sandbox egress proxy: more than ${limits.maxConnections} connections open; retry later`));
      return;
    }
    clients++;
    client.once("close", () => clients--);
    handleConnection(client, ctx).catch((error: unknown) => {
      options.log.error("egress proxy connection failed", { error: (error as Error).message });
      client.destroy();
    });
  });
  clearStaleSocket(options.socketPath);
  const { promise: listening, resolve, reject } = Promise.withResolvers<void>();
  server.once("error", reject);
  server.listen(options.socketPath, () => resolve());
  await listening;
  server.off("error", reject);
  server.on("error", (error) => options.log.error("egress proxy listener failed", { error: error.message }));
  options.log.info("egress proxy listening", { socketPath: options.socketPath });

  let closing: Promise<void> | null = null;
  return {
    socketPath: options.socketPath,
    dropConnections(reason) {
      // Upstream sockets are tracked too: a connection still resolving or connecting has a destroyed
      // client, which handleConnection checks before it uses (or keeps) its upstream.
      const cut = guests.size;
      for (const socket of sockets) socket.destroy();
      if (cut > 0) options.log.info("egress connections dropped", { socketPath: options.socketPath, connections: cut, reason });
      return cut;
    },
    close() {
      closing ??= new Promise<void>((done) => {
        server.close(() => done());
        for (const socket of sockets) socket.destroy();
      }).finally(() => {
        try {
          unlinkSync(options.socketPath);
        } catch {
          // Already gone (net.Server may unlink it itself).
        }
      });
      return closing;
    },
  };
}
