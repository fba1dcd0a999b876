// Secrets the msb way: `--secret ENV@HOST[,HOST…]` names a host env variable that msb reads when it boots
// the VM (create, start, or an exec that starts a stopped one); the guest sees only `$MSB_ENV`, and msb's
// TLS interception (on as soon as there is a secret) swaps the value in for requests to those hosts.
// The value is never in msb's argv or its stored config (checked against 0.6.18's inspect output).
import { microvmSecretsOf, type MicrovmSecret, type VmSpec } from "../driver";
import { asArray, asRecord, asString } from "./json-guards";
import { InvalidSpecError } from "./spec-checks";

type MsbSecret = MicrovmSecret;

const ENV_NAME = /^[A-Z_][A-Z0-9_]{0,127}$/;
const HOST = /^(\*\.)?[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/;

/** The guest's stand-in for a secret: msb's default placeholder, which the guest env carries. */
export function msbPlaceholder(env: string): string {
  return `$MSB_${env}`;
}

/** msb matches secret hosts by name only: a `:port` of ours is dropped (any port of that host). */
function hostsOf(secret: MsbSecret): string[] {
  const hosts = [...new Set(secret.hosts.map((h) => h.toLowerCase().replace(/:\d+$/, "")))].sort();
  const bad = hosts.find((h) => !HOST.test(h));
  if (hosts.length === 0 || bad !== undefined) throw new InvalidSpecError(`secret ${secret.env}: host ${JSON.stringify(bad ?? "")} is not a domain or *.domain msb accepts`);
  return hosts;
}

function checked(spec: VmSpec): MsbSecret[] {
  const secrets = [...microvmSecretsOf(spec)].sort((a, b) => a.env.localeCompare(b.env));
  for (const [i, secret] of secrets.entries()) {
    if (!ENV_NAME.test(secret.env)) throw new InvalidSpecError(`secret env name ${JSON.stringify(secret.env)} must match ${ENV_NAME.source}`);
    if (secrets[i - 1]?.env === secret.env) throw new InvalidSpecError(`secret ${secret.env} is listed twice`);
  }
  return secrets;
}

/** `--secret=ENV@HOST,HOST` per secret, sorted: the same spec always gives the same argv. */
export function buildSecretArgs(spec: VmSpec): string[] {
  return checked(spec).map((secret) => `--secret=${secret.env}@${hostsOf(secret).join(",")}`);
}

/** The env every msb call that may boot the VM needs: each secret's value under its ENV name. */
export function secretEnvOf(spec: VmSpec): Record<string, string> {
  return Object.fromEntries(checked(spec).map((secret) => [secret.env, secret.value]));
}

/** `ENV@HOST,HOST` per secret, sorted: what attestation compares (values are never stored by msb). */
export function secretKeys(secrets: readonly { env: string; hosts: readonly string[] }[] | undefined): string[] {
  return (secrets ?? []).map((s) => `${s.env}@${[...new Set(s.hosts.map((h) => h.toLowerCase().replace(/:\d+$/, "")))].sort().join(",")}`).sort();
}

/** The secrets msb stored (`config.network.secrets.secrets`), values left empty; undefined if unreadable. */
export function readSecrets(network: unknown): Array<{ env: string; hosts: string[]; value: string }> | undefined {
  const list = asArray(asRecord(asRecord(network)?.secrets)?.secrets) ?? [];
  const read = list.map((item) => {
    const env = asString(asRecord(item)?.env_var);
    const hosts = (asArray(asRecord(item)?.allowed_hosts) ?? []).map((h) => asString(asRecord(h)?.exact) ?? asString(asRecord(h)?.wildcard));
    return env === undefined || hosts.includes(undefined) ? undefined : { env, hosts: hosts as string[], value: "" };
  });
  return read.includes(undefined) ? undefined : (read as Array<{ env: string; hosts: string[]; value: string }>);
}
