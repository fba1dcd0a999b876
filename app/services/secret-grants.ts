// Which configured secrets a root session's commands get: every secret of scope "all", plus those of
// scope "granted" that a human granted to that root. Names only: values never leave app/services/credentials.ts.
import type { SecretGrantsRepo } from "../db/secret-grants-repo";
import { SecretNotConfiguredError } from "../errors";
import type { SecretConfig, SecretScope } from "../secrets-config";

/** A configured secret as the API shows it: its name, the hosts its value may go to, and who gets it. */
type ConfiguredSecret = { name: string; hosts: string[]; scope: SecretScope };

/** `granted`: the names stored for the root; `effective`: the configured secrets its commands get now. */
export type SessionSecrets = { granted: string[]; effective: string[] };

export function createSecretGrants(repo: SecretGrantsRepo, configured: readonly SecretConfig[], now: () => number) {
  const secrets: ConfiguredSecret[] = configured.map((s) => ({ name: s.name, hosts: [...s.hosts], scope: s.scope ?? "all" }));
  const known = new Set(secrets.map((s) => s.name));

  /** Refuses (400) any name that is not configured, naming it and listing the configured ones. */
  function check(names: readonly string[]): void {
    const unknown = [...new Set(names)].filter((name) => !known.has(name));
    if (unknown.length > 0) throw new SecretNotConfiguredError(unknown, [...known]);
  }

  /** What a root with these grants gets (they are read with the rest of its view: app/db/session-sandbox-repo.ts). */
  function withGrants(granted: string[]): SessionSecrets {
    const effective = secrets.filter((s) => s.scope === "all" || granted.includes(s.name)).map((s) => s.name);
    return { granted, effective };
  }

  return {
    configured: (): ConfiguredSecret[] => secrets.map((s) => ({ ...s, hosts: [...s.hosts] })),
    check,
    withGrants,
    /** The root's grants become exactly `names` (checked first: a refusal changes nothing). */
    replace(rootSessionID: string, names: readonly string[]): void {
      check(names);
      repo.replace(rootSessionID, names, now());
    },
    forget: (rootSessionIDs: readonly string[]) => repo.forget(rootSessionIDs),
  };
}

export type SecretGrants = ReturnType<typeof createSecretGrants>;
