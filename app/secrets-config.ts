// Reads the secret and git-credential configuration from the manager's environment. Configuration only
// ever names an environment variable; a literal value is refused, so no secret sits in a config file.
import { ConfigError } from "./config";
import { secretRuleProblem } from "../egress/index";

/**
 * Who gets a secret: "all" (the default, as before grants existed) every sandboxed session, "granted"
 * only the root sessions a human granted it to (PUT /api/session-sandbox/:id {"secrets": [...]}).
 */
export const SECRET_SCOPES = ["all", "granted"] as const;
export type SecretScope = (typeof SECRET_SCOPES)[number];

/** SANDBOX_SECRETS: {"NAME": {"env": "HOST_VAR", "hosts": ["api.example.com"], "scope"?: "granted"}}: the guest sees NAME=<placeholder>. */
export type SecretConfig = { name: string; env: string; hosts: string[]; scope?: SecretScope };

/** SANDBOX_GIT_CREDENTIALS: [{"url": "https://github.com/", "env": "HOST_VAR", "username"?: "x-access-token", "repository"?: "/abs/repo"}]. */
export type GitCredentialConfig = { url: string; env: string; username: string; repository: string | null };

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SECRET_NAME = /^[A-Z_][A-Z0-9_]*$/;

function parseJson(variable: string, text: string | undefined): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`${variable} is not valid JSON: ${(error as Error).message}`);
  }
}

function refuseLiteral(variable: string, label: string, entry: Record<string, unknown>): void {
  for (const key of ["value", "token", "password", "secret"]) {
    if (key in entry) {
      throw new ConfigError(`${variable}: ${label} has a literal "${key}"; secrets are never written in configuration: put the value in an environment variable of the manager and name it in "env"`);
    }
  }
}

function envName(variable: string, label: string, value: unknown, env: Record<string, string | undefined>): string {
  if (typeof value !== "string" || !ENV_NAME.test(value)) throw new ConfigError(`${variable}: ${label} needs "env", the name of an environment variable`);
  if (!env[value]) throw new ConfigError(`${variable}: ${label} names the environment variable ${value}, which is not set for the manager`);
  return value;
}

export function loadSecrets(env: Record<string, string | undefined>): SecretConfig[] {
  const parsed = parseJson("SANDBOX_SECRETS", env.SANDBOX_SECRETS);
  if (parsed === undefined) return [];
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new ConfigError('SANDBOX_SECRETS must be an object: {"NAME": {"env": "VAR", "hosts": ["api.example.com"]}}');
  return Object.entries(parsed as Record<string, Record<string, unknown>>).map(([name, entry]) => {
    if (!SECRET_NAME.test(name)) throw new ConfigError(`SANDBOX_SECRETS: secret name ${JSON.stringify(name)} must be an upper-case environment variable name`);
    if (typeof entry !== "object" || entry === null) throw new ConfigError(`SANDBOX_SECRETS: ${name} must be an object {"env", "hosts"}`);
    refuseLiteral("SANDBOX_SECRETS", name, entry);
    const hosts = entry.hosts;
    if (!Array.isArray(hosts) || hosts.length === 0 || !hosts.every((h) => typeof h === "string" && h.length > 0)) {
      throw new ConfigError(`SANDBOX_SECRETS: ${name} needs "hosts", the domains its value may be sent to`);
    }
    const scope = entry.scope ?? "all";
    if (!(SECRET_SCOPES as readonly unknown[]).includes(scope)) throw new ConfigError(`SANDBOX_SECRETS: ${name}: "scope" must be "all" (every session) or "granted" (only sessions it is granted to)`);
    const secret = { name, env: envName("SANDBOX_SECRETS", name, entry.env, env), hosts: hosts as string[], scope: scope as SecretScope };
    // The proxy's own check, at start: a rule it would skip (bad host, unusable value) is an error now.
    const problem = secretRuleProblem({ name, placeholder: "sandbox-placeholder-startup-check", value: env[secret.env]!, hosts: secret.hosts });
    if (problem) throw new ConfigError(`SANDBOX_SECRETS: ${problem}`);
    return secret;
  });
}

export function loadGitCredentials(env: Record<string, string | undefined>): GitCredentialConfig[] {
  const parsed = parseJson("SANDBOX_GIT_CREDENTIALS", env.SANDBOX_GIT_CREDENTIALS);
  if (parsed === undefined) return [];
  if (!Array.isArray(parsed)) throw new ConfigError('SANDBOX_GIT_CREDENTIALS must be an array: [{"url": "https://github.com/", "env": "VAR"}]');
  return parsed.map((entry: Record<string, unknown>, index) => {
    const label = `entry ${index + 1}`;
    if (typeof entry !== "object" || entry === null) throw new ConfigError(`SANDBOX_GIT_CREDENTIALS: ${label} must be an object`);
    refuseLiteral("SANDBOX_GIT_CREDENTIALS", label, entry);
    let url: URL;
    try {
      url = new URL(String(entry.url));
    } catch {
      throw new ConfigError(`SANDBOX_GIT_CREDENTIALS: ${label} needs "url", e.g. "https://github.com/"`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new ConfigError(`SANDBOX_GIT_CREDENTIALS: ${label}: only http and https URLs carry credentials`);
    const repository = typeof entry.repository === "string" ? entry.repository : null;
    if (repository !== null && !repository.startsWith("/")) throw new ConfigError(`SANDBOX_GIT_CREDENTIALS: ${label}: "repository" must be an absolute path`);
    return {
      url: `${url.protocol}//${url.host}/`,
      env: envName("SANDBOX_GIT_CREDENTIALS", label, entry.env, env),
      username: typeof entry.username === "string" && entry.username ? entry.username : "x-access-token",
      repository,
    };
  });
}
