// The VMs' egress proxies over their whole life; this module owns them:
// - exec-prepare puts the proxy's socket path into the VM spec for a tier that reaches out through the
//   host proxy and a network mode other than none (runtime/tiers/embedded.ts);
// - openFor starts it (with the command's secret substitutions) before every command or shell runs;
// - the runtime mounts the socket's directory into the guest and hands the socket to the VM's uid as the
//   VM starts (runtime/local/oci-config.ts, runtime/local/egress-socket.ts);
// - revocation cuts its open connections and keeps it listening (app/services/egress-revocation.ts);
// - what it refused while a command ran is said on that command's stderr (refusalNotes: a client shows a
//   403 from a proxy as "403" or "tunnel failed", not the reason);
// - it closes when its VM is removed (the subscription below), and every one closes at shutdown (app/main.ts).
import { egressSocketOf } from "../../runtime/driver";
import { RuntimeFailedError } from "../errors";
import type { EventBus } from "../events/event-bus";
import type { EgressProxies } from "./egress-proxies";
import type { PreparedExec } from "./exec-prepare";
import { NO_NOTES, type AfterNotes } from "./exec-runs";

/** Refusals named on one command's stderr; the rest are counted. */
const MAX_NOTES = 5;

/** A word as a shell reads it back unchanged (policy entries such as `*.example.com` need the quotes). */
function shellWord(word: string): string {
  return /^[A-Za-z0-9._:\/-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}

export function createVmEgress(proxies: EgressProxies, events: EventBus) {
  const stop = new AbortController();
  void (async () => {
    for await (const event of events.subscribe(stop.signal)) {
      if (event.type === "vm" && event.status === "removed") void proxies.close(event.vmName);
    }
  })();

  return {
    socketPathFor: proxies.socketPathFor,
    /** The VM's way out (if its spec has one) listens before the command's first connection; `what` words the refusal. */
    async openFor(prepared: PreparedExec, what: string): Promise<void> {
      if (!egressSocketOf(prepared.spec)) return;
      proxies.setSecrets(prepared.spec.name, prepared.proxyRules);
      await proxies.ensure(prepared.spec.name, prepared.rootSessionID).catch((error: Error) => {
        throw new RuntimeFailedError(`the VM's egress proxy could not start, so ${what}: ${error.message}`);
      });
    },
    /**
     * Made as a command starts; as it ends, the stderr lines for what the VM's proxy refused meanwhile (a
     * command beside it in the same VM may have caused some), each with its reason and, where an allowlist
     * entry would let it through, the command that sets one.
     */
    refusalNotes(prepared: PreparedExec): AfterNotes {
      if (!egressSocketOf(prepared.spec)) return NO_NOTES;
      const vmName = prepared.spec.name;
      const mark = proxies.denialMark(vmName);
      const notes = () => {
        const denials = proxies.deniedSince(vmName, mark);
        const network = prepared.spec.network;
        const allowed = network.mode === "allowlist" ? network.allow : [];
        const lines = denials.slice(0, MAX_NOTES).map((denial) => {
          const fix = denial.allowEntry ? ` (\`session-sandbox network ${prepared.rootSessionID} allow ${[...allowed, denial.allowEntry].map(shellWord).join(" ")}\`)` : "";
          return `session-sandbox: the network policy refused ${denial.target}: ${denial.reason}${fix}\n`;
        });
        if (denials.length > MAX_NOTES) lines.push(`session-sandbox: … and ${denials.length - MAX_NOTES} more refused targets (each is in the manager's log as "egress denied")\n`);
        return lines;
      };
      return { chunk: () => {}, notes };
    },
  };
}

export type VmEgress = ReturnType<typeof createVmEgress>;
