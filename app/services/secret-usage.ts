// Every substitution counted: one `secret` event per name (with the session, VM and target host) and the
// sandbox_secret_substitutions_total counter by name and host. Names and hosts only, never a value.
import { domainMatches, normalizeHostName, parseDomainPattern } from "../../egress/allow-entry";
import type { SecretRule } from "../../egress/index";
import type { EventBus } from "../events/event-bus";
import type { Metrics } from "../metrics";
import type { Substitution } from "./egress-proxies";

/**
 * Used when no configured host entry of the rule matches (cannot happen for a substitution; kept bounded anyway).
 * Exported so a test can expect it.
 */
export const OTHER_HOST_LABEL = "other";

/**
 * The metric's host label: the rule's configured host entry that matched, so a guest that makes up
 * subdomains of `*.example.com` adds no series. Ports are not known here and are not compared.
 * Exported so a test checks it directly.
 */
export function hostLabel(rules: readonly SecretRule[], name: string, host: string): string {
  const normalized = normalizeHostName(host);
  for (const entry of rules.find((rule) => rule.name === name)?.hosts ?? []) {
    const pattern = parseDomainPattern(entry);
    if (pattern.ok && domainMatches(pattern.value, normalized, pattern.value.port ?? 0)) return entry.toLowerCase();
  }
  return OTHER_HOST_LABEL;
}

export function createSecretUsage(events: EventBus, metrics: () => Metrics | undefined, now: () => number) {
  return (substitution: Substitution): void => {
    const { vmName, rootSessionID, names, host, rules } = substitution;
    for (const name of names) {
      metrics()?.secretSubstitutions.inc({ name, host: hostLabel(rules, name, host) });
      events.publish({ type: "secret", phase: "substituted", name, host: normalizeHostName(host), rootSessionID, vmName, at: now() });
    }
  };
}
