// Revocation cuts live traffic: a change to a root's network policy, its secrets or git credentials, a
// toggle-off, a deletion or sandboxing disabled closes every open connection of the VM's egress proxy at
// once, CONNECT tunnels included. The proxy keeps listening and reads the policy per connection, so the
// guest's next connection is judged by the new policy; the VM's secret rules are re-resolved here, so a
// revoked secret is not substituted in it either.
import type { SecretRule } from "../../egress/index";
import type { Logger } from "../log";
import type { Credentials } from "./credentials";
import type { EgressProxies } from "./egress-proxies";
import type { Services } from "./index";
import type { LifecycleEvent } from "./lifecycle-events";
import { vmNameFor } from "../vm-identity";

type EgressRevocationDeps = {
  egress: EgressProxies;
  services: Pick<Services, "sessionSandbox" | "sessions" | "settings">;
  credentials?: Credentials;
  log: Logger;
};

export function createEgressRevocation({ egress, services, credentials, log }: EgressRevocationDeps) {
  /** What the root's next command would get (app/services/exec.ts resolves the same way). */
  function rulesFor(rootSessionID: string): SecretRule[] {
    try {
      const view = services.sessionSandbox.get(rootSessionID);
      const pins = services.sessions.pinnedMounts(rootSessionID);
      if (!view.sandboxed || !pins || !credentials) return [];
      return credentials.resolve(pins.top.path, services.settings.get().forwardGitCredentials, view.secrets.effective).proxyRules;
    } catch {
      return []; // deleted, or its chain is broken: nothing
    }
  }

  const running = (vmName: string) => egress.running().includes(vmName);

  function drop(vmName: string, reason: string): void {
    if (!running(vmName)) return;
    void egress.dropConnections(vmName, reason).catch((error: Error) => log.error("egress revocation failed", { vmName, reason, error: error.message }));
  }

  /** Rules first, then the cut: a connection the guest opens right after is already under the new grants. */
  function refreshAndDrop(vmName: string, reason: string): void {
    if (!running(vmName)) return;
    const rootSessionID = egress.rootOf(vmName);
    egress.setSecrets(vmName, rootSessionID ? rulesFor(rootSessionID) : []);
    drop(vmName, reason);
  }

  function followsDefault(vmName: string): boolean {
    const rootSessionID = egress.rootOf(vmName);
    try {
      return rootSessionID === undefined || services.sessionSandbox.get(rootSessionID).network.override === null;
    } catch {
      return true; // unreadable: cut rather than keep
    }
  }

  return {
    onLifecycle(event: LifecycleEvent): void {
      switch (event.type) {
        case "network-changed":
          return drop(vmNameFor(event.rootSessionID), "network policy changed");
        case "default-network-changed":
          for (const vmName of egress.running().filter(followsDefault)) drop(vmName, "default network policy changed");
          return;
        case "secrets-changed":
          return refreshAndDrop(vmNameFor(event.rootSessionID), "secrets changed");
        case "git-credentials-changed":
          for (const vmName of egress.running()) refreshAndDrop(vmName, "git credential forwarding changed");
          return;
        case "toggled-off":
          return drop(vmNameFor(event.rootSessionID), "sandbox toggled off");
        case "sessions-deleted":
          for (const id of event.sessionIds) drop(vmNameFor(id), "session deleted");
          return;
        case "sandboxing-disabled":
          for (const vmName of egress.running()) drop(vmName, "sandboxing disabled");
          return;
      }
    },
    /** A VM being removed (any reason: toggle-off, delete, sweep, DELETE /api/vms/:name) loses its connections first. */
    onRemoving(vmName: string, reason: string): void {
      drop(vmName, `VM removal (${reason})`);
    },
  };
}
