// What a command gets of the host's secrets and git credentials, resolved per command (no restart):
// - each configured secret: the guest sees NAME=<placeholder>; the egress proxy puts the real value in
//   plain-HTTP requests to that secret's hosts only;
// - git identity (author and committer): always;
// - git credentials, when forwarding is on: `http.<url>.extraheader` through GIT_CONFIG_COUNT/KEY/VALUE,
//   one per host (a repository-bound one beats the default), at most 16 hosts. The header holds a
//   placeholder the proxy swaps for the credential, for http:// and https:// alike (the proxy opens the
//   TLS of hosts that receive secrets, egress/intercept.ts); GH_TOKEN/GITHUB_TOKEN are placeholders
//   for GitHub's hosts too. The guest never holds a credential.
import { randomBytes } from "node:crypto";
import type { SecretRule } from "../../egress/index";
import type { Logger } from "../log";
import type { GitCredentialConfig, SecretConfig } from "../secrets-config";

/** Exported so a test checks the cap. */
export const MAX_GIT_HOSTS = 16;
/** Forwarded (as placeholders) with the git credentials: what gh and GitHub's API clients read. */
const GITHUB_TOKEN_VARIABLES = ["GH_TOKEN", "GITHUB_TOKEN"] as const;
/** Where a GitHub token is sent: the API (gh, octokit), uploads, and git over HTTPS. */
const GITHUB_HOSTS = ["github.com", "api.github.com", "uploads.github.com"];
const IDENTITY_TTL_MS = 5_000;

type Forwarding = { env: Record<string, string>; proxyRules: SecretRule[]; warnings: string[] };

type Identity = { name: string | null; email: string | null };

function placeholder(label: string): string {
  return `sandbox-placeholder-${label.toLowerCase().replace(/[^a-z0-9]/g, "-")}-${randomBytes(12).toString("hex")}`;
}

export function createCredentials(options: {
  secrets: SecretConfig[];
  gitCredentials: GitCredentialConfig[];
  env: Record<string, string | undefined>;
  log: Logger;
  now?: () => number;
}) {
  const now = options.now ?? Date.now;
  // Placeholders live as long as the manager: stable across commands, meaningless outside it.
  const secretPlaceholders = new Map(options.secrets.map((s) => [s.name, placeholder(s.name)]));
  const gitPlaceholders = new Map(options.gitCredentials.map((c, i) => [i, placeholder(`git-${new URL(c.url).hostname}`)]));
  const githubPlaceholders = new Map(GITHUB_TOKEN_VARIABLES.map((key) => [key, placeholder(key)]));
  let identity: { value: Identity; at: number } | undefined;

  function gitIdentity(): Identity {
    if (identity && now() - identity.at < IDENTITY_TTL_MS) return identity.value;
    const read = (key: string) => {
      const result = Bun.spawnSync(["git", "config", "--global", "--get", key], { stdout: "pipe", stderr: "ignore", env: { HOME: options.env.HOME ?? "", PATH: options.env.PATH ?? "" } });
      return result.exitCode === 0 ? result.stdout.toString().trim() || null : null;
    };
    const value = { name: options.env.SANDBOX_GIT_NAME || read("user.name"), email: options.env.SANDBOX_GIT_EMAIL || read("user.email") };
    identity = { value, at: now() };
    return value;
  }

  /** One credential per host: the one bound to this repository, else the first default one. */
  function credentialsFor(repositoryTop: string): { config: GitCredentialConfig; index: number }[] {
    const byHost = new Map<string, { config: GitCredentialConfig; index: number }>();
    options.gitCredentials.forEach((config, index) => {
      const current = byHost.get(config.url);
      const bound = config.repository === repositoryTop;
      if (config.repository !== null && !bound) return;
      if (!current || (bound && current.config.repository === null)) byHost.set(config.url, { config, index });
    });
    return [...byHost.values()];
  }

  /** `secretNames`: the secrets this session may have (app/services/secret-grants.ts); all when absent. */
  function resolve(repositoryTop: string, forwardGitCredentials: boolean, secretNames?: readonly string[]): Forwarding {
    const env: Record<string, string> = {};
    const proxyRules: SecretRule[] = [];
    const warnings: string[] = [];
    for (const secret of options.secrets) {
      if (secretNames && !secretNames.includes(secret.name)) continue;
      const value = options.env[secret.env];
      const stand = secretPlaceholders.get(secret.name)!;
      env[secret.name] = stand;
      if (value) proxyRules.push({ name: secret.name, placeholder: stand, value, hosts: secret.hosts });
    }
    const { name, email } = gitIdentity();
    if (name) Object.assign(env, { GIT_AUTHOR_NAME: name, GIT_COMMITTER_NAME: name });
    if (email) Object.assign(env, { GIT_AUTHOR_EMAIL: email, GIT_COMMITTER_EMAIL: email });
    if (!forwardGitCredentials) return { env, proxyRules, warnings };

    const chosen = credentialsFor(repositoryTop);
    if (chosen.length > MAX_GIT_HOSTS) {
      warnings.push(`${chosen.length} git hosts have credentials; only the first ${MAX_GIT_HOSTS} are forwarded (${chosen.slice(MAX_GIT_HOSTS).map((c) => c.config.url).join(", ")} are not)`);
    }
    const forwarded = chosen.slice(0, MAX_GIT_HOSTS);
    forwarded.forEach(({ config, index }, i) => {
      const basic = Buffer.from(`${config.username}:${options.env[config.env] ?? ""}`).toString("base64");
      const stand = gitPlaceholders.get(index)!;
      env[`GIT_CONFIG_KEY_${i}`] = `http.${config.url}.extraheader`;
      env[`GIT_CONFIG_VALUE_${i}`] = `Authorization: Basic ${stand}`;
      const host = new URL(config.url).host;
      proxyRules.push({ name: `git-${host.replace(/[^A-Za-z0-9_.-]/g, "-")}`, placeholder: stand, value: basic, hosts: [host] });
    });
    if (forwarded.length > 0) env.GIT_CONFIG_COUNT = String(forwarded.length);
    for (const key of GITHUB_TOKEN_VARIABLES) {
      const value = options.env[key];
      if (!value) continue;
      const stand = githubPlaceholders.get(key)!;
      env[key] = stand;
      proxyRules.push({ name: key, placeholder: stand, value, hosts: GITHUB_HOSTS });
    }
    for (const warning of warnings) options.log.warn("git credential forwarding", { warning });
    return { env, proxyRules, warnings };
  }

  // `secrets`: names, hosts and scope (never values), what per-session grants are checked against.
  return { resolve, secrets: options.secrets };
}

export type Credentials = ReturnType<typeof createCredentials>;
