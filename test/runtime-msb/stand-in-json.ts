// What the stand-in msb (a FAKE, see stand-in-msb.ts) prints for `inspect --format=json` and `list
// --format=json`: the RECORDED real msb 0.6.18 outputs in fixtures/, with the stored values filled in,
// so the driver's real parser and attestation read real-shaped JSON.
import allFixture from "./fixtures/inspect-all-0.6.18.json";
import noneFixture from "./fixtures/inspect-none-0.6.18.json";
import storedFixture from "./fixtures/inspect-stored-0.6.18.json";
import type { StoredSandbox } from "./stand-in-args";

type Json = Record<string, unknown>;

/** The recorded mount entry of each kind (fixtures/inspect-stored-0.6.18.json holds one of each). */
function recordedMount(type: "Tmpfs" | "Named" | "Bind"): Json {
  const found = storedFixture.config.mounts.find((m) => m.type === type);
  if (!found) throw new Error(`fixtures/inspect-stored-0.6.18.json has no ${type} mount`);
  return structuredClone(found) as Json;
}

/**
 * msb 0.6.18 stores the tmpfs, then the named volume, then directory binds by guest path, then file binds
 * (as recorded in inspect-stored-0.6.18.json from argv order repo, trust-dir, trust-at-/run, bundle-file).
 */
function mountsJson(sandbox: StoredSandbox): Json[] {
  const withOptions = (entry: Json, readonly: boolean) => ({ ...entry, options: { ...(entry.options as Json), readonly } });
  const binds = (file: boolean) =>
    sandbox.binds
      .filter((b) => b.file === file)
      .sort((a, b) => (a.guest < b.guest ? -1 : a.guest > b.guest ? 1 : 0))
      .map((b) => withOptions({ ...recordedMount("Bind"), host: b.host, guest: b.guest }, b.readOnly));
  return [
    withOptions({ ...recordedMount("Tmpfs"), size_mib: sandbox.tmpSizeMib }, false),
    withOptions({ ...recordedMount("Named"), name: sandbox.volume }, false),
    ...binds(false),
    ...binds(true),
  ];
}

/** How `msb inspect` spells a CLI group token (measured on 0.6.18, see runtime/msb/network-rule-json.ts). */
const GROUP_OF_TOKEN: Record<string, string> = { public: "public", private: "private", loopback: "loopback", "link-local": "link_local", meta: "metadata", multicast: "multicast", host: "host" };

function destinationOf(target: string): Json {
  const group = GROUP_OF_TOKEN[target];
  if (group) return { group };
  if (target.startsWith("domain=")) return { domain: target.slice("domain=".length) };
  if (target.startsWith("*.")) return { domain_suffix: target.slice(2) };
  const address = target.replace(/^\[(.*)\]$/, "$1");
  if (/^[0-9.]+(\/\d+)?$/.test(address)) return { cidr: address.includes("/") ? address : `${address}/32` };
  if (address.includes(":")) return { cidr: address.includes("/") ? address : `${address}/128` };
  return { domain: target };
}

/**
 * One `--net-rule` token as msb 0.6.18 stores it (the layout of fixtures/inspect-allowlist-floor-0.6.18.json):
 * `allow@dns` is the gateway on port 53 over UDP and TCP; `:tcp:P[-Q]` one TCP port range; no suffix any port.
 */
export function ruleJson(token: string): Json {
  if (token === "allow@dns") return { action: "allow", destination: { group: "host" }, direction: "egress", ports: [{ end: 53, start: 53 }], protocols: ["udp", "tcp"] };
  const match = /^(allow|deny)@(.+?)(?::tcp:(\d+)(?:-(\d+))?)?$/.exec(token);
  if (!match) throw new Error(`the stand-in msb (a FAKE) cannot store the rule ${JSON.stringify(token)}`);
  const [, action, target = "", low, high] = match;
  const ports = low === undefined ? [] : [{ end: Number(high ?? low), start: Number(low) }];
  return { action, destination: destinationOf(target), direction: "egress", ports, protocols: low === undefined ? [] : ["tcp"] };
}

function networkJson(network: StoredSandbox["network"]): Json {
  if (network.mode === "all") return structuredClone(allFixture.config.network) as Json;
  const recorded = structuredClone(noneFixture.config.network) as Json;
  const rules = network.mode === "rules" ? network.tokens.map(ruleJson) : [];
  return { ...recorded, policy: { ...(recorded.policy as Json), rules } };
}

function imageJson(image: string): Json {
  // Only a rootfs directory was recorded (Bind); an OCI reference's shape is the one parse-inspect.ts reads.
  return image.startsWith("/") ? { Bind: { follow_root_symlinks: false, path: image } } : { Oci: { reference: image } };
}

export function inspectJson(sandbox: StoredSandbox, status: "Running" | "Stopped"): Json {
  const recorded = structuredClone(storedFixture) as Json;
  const config = recorded.config as Json;
  return {
    ...recorded,
    config: {
      ...config,
      image: imageJson(sandbox.image),
      labels: sandbox.labels,
      mounts: mountsJson(sandbox),
      name: sandbox.name,
      network: networkJson(sandbox.network),
      resources: { cpus: sandbox.cpus, max_cpus: sandbox.cpus, max_memory_mib: sandbox.memoryMib, memory_mib: sandbox.memoryMib },
    },
    created_at: sandbox.createdAt,
    name: sandbox.name,
    pending_changes: [],
    status,
    updated_at: sandbox.createdAt,
  };
}

/** One entry of `msb list --format=json` (fixtures/list-0.6.18.json): newest first. */
export function listJson(entries: { sandbox: StoredSandbox; status: "Running" | "Stopped" }[]): Json[] {
  return [...entries]
    .sort((a, b) => (a.sandbox.createdAt < b.sandbox.createdAt ? 1 : -1))
    .map(({ sandbox, status }) => ({ created_at: sandbox.createdAt, image: sandbox.image, name: sandbox.name, status }));
}
