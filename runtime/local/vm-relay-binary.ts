// Builds the VM's relay (vm-relay.c) once per source version (runtime/c-build.ts), statically linked so it
// runs in any image, into the host directory the exec agent shares (world-readable: crun binds it from
// inside the VM's user namespace, runsc's gofer reads it as the VM's uid). Both embedded tiers bind it into
// every new VM; a host that cannot build it (no gcc, no static libc) keeps socat from the image instead.
import { buildCProgram, type CBuild, type CProgram } from "../c-build";
import { DEFAULT_EXEC_AGENT_DIR, STATIC_GUEST_BUILD } from "./exec-agent-binary";

const VM_RELAY: CProgram = { label: "the VM relay", name: "vm-relay", sources: [new URL("./vm-relay.c", import.meta.url).pathname], ...STATIC_GUEST_BUILD };

/** The relay's path, building it if needed; a problem means new VMs fall back to the image's socat. */
export function ensureVmRelay(dir = DEFAULT_EXEC_AGENT_DIR): CBuild {
  return buildCProgram(VM_RELAY, dir);
}
