// How a microvm (msb) VM gets out: msb has no forwarder to the host proxy, so there is no HTTP_PROXY, no
// egress socket and no manager CA. Its policy is msb's own network rules (runtime/msb/network-rules.ts),
// and the secrets this session may use (granted ones only: credentials.resolve filters them) go to msb's
// own substitution: each proxy rule becomes `--secret ENV@HOSTS`, and the guest's placeholder becomes
// msb's `$MSB_ENV` wherever the command env carried ours (a token variable, a git auth header).
import type { VmSpec } from "../../runtime/driver";
import { msbPlaceholder } from "../../runtime/msb/secret-args";
import type { Forwarding } from "./credentials";

export type MsbForwarding = { env: Record<string, string>; secrets: NonNullable<VmSpec["secrets"]> };

/** `github-token` → `SANDBOX_SECRET_GITHUB_TOKEN`: the host env name msb reads the value from. */
function envNameFor(name: string, taken: Set<string>): string {
  const base = `SANDBOX_SECRET_${name.toUpperCase().replace(/[^A-Z0-9]+/g, "_")}`;
  let env = base;
  for (let i = 2; taken.has(env); i++) env = `${base}_${i}`;
  taken.add(env);
  return env;
}

export function msbForwarding(forwarding: Pick<Forwarding, "env" | "proxyRules">): MsbForwarding {
  const taken = new Set<string>();
  const secrets = forwarding.proxyRules.map((rule) => ({ env: envNameFor(rule.name, taken), hosts: rule.hosts, value: rule.value, placeholder: rule.placeholder }));
  const env = Object.fromEntries(
    Object.entries(forwarding.env).map(([key, value]) => [key, secrets.reduce((text, s) => text.split(s.placeholder).join(msbPlaceholder(s.env)), value)]),
  );
  return { env, secrets: secrets.map(({ env: name, hosts, value }) => ({ env: name, hosts, value })) };
}
