// The VMs' egress proxies over their whole life; this module owns them:
// - exec-prepare puts the proxy's socket path into the VM spec for a tier that reaches out through the
//   host proxy and a network mode other than none (runtime/tiers/embedded.ts);
// - openFor starts it (with the command's secret substitutions) before every command or shell runs;
// - the runtime mounts the socket's directory into the guest and hands the socket to the VM's uid as the
//   VM starts (runtime/local/oci-config.ts, runtime/local/egress-socket.ts);
// - revocation cuts its open connections and keeps it listening (app/services/egress-revocation.ts);
// - it closes when its VM is removed (the subscription below), and every one closes at shutdown (app/main.ts).
import { egressSocketOf } from "../../runtime/driver";
import { RuntimeFailedError } from "../errors";
import type { EventBus } from "../events/event-bus";
import type { EgressProxies } from "./egress-proxies";
import type { PreparedExec } from "./exec-prepare";

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
  };
}

export type VmEgress = ReturnType<typeof createVmEgress>;
