// The microvm tier (msb): a VM with a kernel of its own, whose way out is msb's own. There is no forwarder
// to the host proxy, so no HTTP_PROXY, no egress socket and no manager CA. Its policy is msb's network
// rules (runtime/msb/network-rules.ts), and the secrets a session may use (granted ones only: the
// credentials resolve them) go to msb's own substitution: each proxy rule becomes `--secret ENV@HOSTS`,
// and the guest's placeholder becomes msb's `$MSB_ENV` wherever the command env carried ours (a token
// variable, a git auth header).
import type { MicrovmSecret } from "../driver";
import { msbAllowlistProblems } from "../msb/network-rules";
import { msbPlaceholder } from "../msb/secret-args";
import type { Forwarding, Tier } from "./tier";

/** `github-token` → `SANDBOX_SECRET_GITHUB_TOKEN`: the host env name msb reads the value from. */
function envNameFor(name: string, taken: Set<string>): string {
  const base = `SANDBOX_SECRET_${name.toUpperCase().replace(/[^A-Z0-9]+/g, "_")}`;
  let env = base;
  for (let i = 2; taken.has(env); i++) env = `${base}_${i}`;
  taken.add(env);
  return env;
}

/**
 * The session's credentials the msb way: its secrets for msb, and the guest env with msb's placeholders.
 * Exported so a test checks it directly.
 */
export function msbForwarding(forwarding: Forwarding): { env: Record<string, string>; secrets: MicrovmSecret[] } {
  const taken = new Set<string>();
  const secrets = forwarding.proxyRules.map((rule) => ({ env: envNameFor(rule.name, taken), hosts: rule.hosts, value: rule.value, placeholder: rule.placeholder }));
  const env = Object.fromEntries(
    Object.entries(forwarding.env).map(([key, value]) => [key, secrets.reduce((text, s) => text.split(s.placeholder).join(msbPlaceholder(s.env)), value)]),
  );
  return { env, secrets: secrets.map(({ env: name, hosts, value }) => ({ env: name, hosts, value })) };
}

export const microvmTier: Tier = {
  name: "microvm",
  runtime: "msb",
  imageFamily: "oci",
  needsKvm: true,
  // msb keeps its volumes itself: the disk quota is recorded, not enforced.
  unmeasured: "the msb runtime does not report per-VM usage (a microVM's processes are not host cgroups); use `msb metrics` on the host",
  networkProblems: msbAllowlistProblems,
  wayOut({ forwarding }) {
    const msb = msbForwarding(forwarding);
    return { tierPart: { kind: "microvm", secrets: msb.secrets }, env: msb.env, proxyRules: [] };
  },
};
