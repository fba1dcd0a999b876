// One egress proxy per VM whose network mode is not none: a Unix socket under the runtime dir that the
// VM reaches through its own 127.0.0.1:3128 (the local runtime bind-mounts the socket's directory and
// runs a forwarder). The policy is read per connection, so a change applies to the next command.
import { chmodSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { NetworkPolicy } from "../../egress/network-policy";
import { HOST_ALIAS, startEgressProxy, type EgressDenial, type EgressProxy, type Interception, type SecretRule } from "../../egress/index";
import type { Logger } from "../log";
import { DenialJournal } from "./egress-denials";

async function resolveWithHostAlias(host: string): Promise<string[]> {
  if (host.toLowerCase() === HOST_ALIAS) return ["127.0.0.1"];
  const { lookup } = await import("node:dns/promises");
  return (await lookup(host, { all: true })).map((entry) => entry.address);
}

/** A request that carried secrets went out: which VM, whose session, the names, the host and the VM's rules. */
export type Substitution = { vmName: string; rootSessionID: string; names: string[]; host: string; rules: readonly SecretRule[] };

export function createEgressProxies(options: {
  dir: string;
  policyFor: (rootSessionID: string) => NetworkPolicy;
  log: Logger;
  onSubstituted?: (substitution: Substitution) => void;
  /** TLS interception of CONNECTs to hosts that receive secrets (the manager CA's leaves, the upstream roots). */
  interception?: Interception;
}) {
  const proxies = new Map<string, Promise<EgressProxy>>();
  const secrets = new Map<string, SecretRule[]>();
  const roots = new Map<string, string>();
  const denials = new Map<string, DenialJournal>();
  const journalOf = (vmName: string) => denials.get(vmName) ?? denials.set(vmName, new DenialJournal()).get(vmName)!;

  const socketPathFor = (vmName: string) => join(options.dir, vmName, "proxy.sock");

  /** Starts the VM's proxy if it is not running; resolves once it listens. */
  function ensure(vmName: string, rootSessionID: string): Promise<EgressProxy> {
    let proxy = proxies.get(vmName);
    if (!proxy) {
      const socketPath = socketPathFor(vmName);
      // 0711: the VM's unprivileged host uid must reach the socket. The socket itself is root's until the
      // runtime hands it to the VM's uid (0660) as the VM starts: no other VM or local user may connect.
      mkdirSync(join(options.dir, vmName), { recursive: true, mode: 0o711 });
      roots.set(vmName, rootSessionID);
      proxy = startEgressProxy({
        socketPath,
        policy: () => options.policyFor(rootSessionID),
        secrets: () => secrets.get(vmName) ?? [],
        onSubstituted: (names, host) => options.onSubstituted?.({ vmName, rootSessionID, names, host, rules: secrets.get(vmName) ?? [] }),
        onDenied: (denial: EgressDenial) => journalOf(vmName).add(denial),
        resolve: resolveWithHostAlias,
        log: options.log,
        interception: options.interception,
      }).then((started) => {
        chmodSync(socketPath, 0o600);
        return started;
      });
      proxy.catch(() => proxies.delete(vmName));
      proxies.set(vmName, proxy);
    }
    return proxy;
  }

  async function close(vmName: string): Promise<void> {
    const proxy = proxies.get(vmName);
    proxies.delete(vmName);
    secrets.delete(vmName);
    roots.delete(vmName);
    denials.delete(vmName);
    await (await proxy?.catch(() => undefined))?.close();
    rmSync(join(options.dir, vmName), { recursive: true, force: true });
  }

  return {
    socketPathFor,
    ensure,
    /** The secret substitutions of the VM's latest command (resolved per command). */
    setSecrets: (vmName: string, rules: SecretRule[]) => void secrets.set(vmName, rules),
    close,
    /**
     * Revocation: cuts every open connection of the VM's proxy at once (CONNECT tunnels too) and keeps it
     * listening, so the guest's next connection is judged by the policy and secrets of now.
     */
    async dropConnections(vmName: string, reason: string): Promise<number> {
      const proxy = await proxies.get(vmName)?.catch(() => undefined);
      return proxy?.dropConnections(reason) ?? 0;
    },
    /** Where the VM's refusals stand now: pass it to `deniedSince` when the command ends. */
    denialMark: (vmName: string) => journalOf(vmName).mark(),
    /** What the VM's proxy refused since `mark`, each target and rule once. */
    deniedSince: (vmName: string, mark: number) => denials.get(vmName)?.since(mark) ?? [],
    /** The root session each running proxy serves. */
    rootOf: (vmName: string) => roots.get(vmName),
    running: () => [...proxies.keys()],
    async closeAll(): Promise<void> {
      await Promise.all([...proxies.keys()].map(close));
    },
  };
}

export type EgressProxies = ReturnType<typeof createEgressProxies>;

