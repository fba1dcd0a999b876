// Where the hosts that receive secrets live. A CONNECT by an IP literal, or by another name that resolves to
// the same address, would otherwise be an opaque tunnel to a server that stores what the guest sent it:
// the guest could read a substituted value back unredacted. Such a CONNECT is treated as one to the secret
// host itself (opened up, or refused). The addresses come from resolving the exact secret host names
// (cached for a minute) and from every resolution of a secret host the proxy makes anyway. A rule with a
// port (`api.example.com:8443`) marks that port of the address; a rule without one, every port.
import { domainMatches, normalizeHostName } from "./allow-entry";
import type { EgressTarget } from "./policy";
import type { CompiledSecret } from "./secrets";
import { resolveTarget, type Resolver } from "./upstream";

const FRESH_MS = 60_000;

type Known = { host: string; port: number | null };

export class SecretDestinations {
  /** address → the secret hosts seen there (with the port their rule names, or null for every port). */
  private readonly known = new Map<string, Known[]>();
  private readonly resolvedAt = new Map<string, number>();

  constructor(
    private readonly resolve: Resolver,
    private readonly timeoutMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * After a connection to `target` by name resolved to `addresses`: if a secret rule names that host, its
   * addresses are recorded, with the port the rule names (every port for a rule without one).
   */
  learnFromTarget(secrets: readonly CompiledSecret[], target: EgressTarget, addresses: readonly string[]): void {
    const host = normalizeHostName(target.host);
    for (const secret of secrets) {
      for (const pattern of secret.hosts) {
        if (domainMatches({ ...pattern, port: null }, host, target.port)) this.learn(host, pattern.port, addresses);
      }
    }
  }

  /** Records the addresses a secret host's name resolved to (kept: an address once a secret host's stays one). */
  learn(host: string, port: number | null, addresses: readonly string[]): void {
    for (const address of addresses) {
      const list = (this.known.get(address) ?? []).filter((entry) => !(entry.host === host && entry.port === port));
      this.known.set(address, [...list, { host, port }]);
    }
  }

  /**
   * The secret host that lives at one of `addresses` and receives secrets on `port`, if any. The exact
   * (non-wildcard) host names of `secrets` are resolved first when not resolved in the last minute; a
   * lookup that fails counts as no address (the name's own connections fail the same way).
   */
  async ownerOf(secrets: readonly CompiledSecret[], addresses: readonly string[], port: number): Promise<string | undefined> {
    const exact = secrets.flatMap((secret) => secret.hosts.filter((pattern) => !pattern.wildcard));
    await Promise.all(
      exact.map(async (pattern) => {
        const name = normalizeHostName(pattern.name);
        const key = `${name}:${pattern.port ?? "*"}`;
        if (this.now() - (this.resolvedAt.get(key) ?? -Infinity) < FRESH_MS) return;
        this.resolvedAt.set(key, this.now());
        const found = await resolveTarget(this.resolve, name, this.timeoutMs).catch(() => [] as string[]);
        this.learn(name, pattern.port, found);
      }),
    );
    for (const address of addresses) {
      const entry = this.known.get(address)?.find((known) => known.port === null || known.port === port);
      if (entry) return entry.host;
    }
    return undefined;
  }
}
