// One name space for the commands that act on a sandbox: a VM's name (ocm-session-…) or the id of any
// session of its tree, whichever the user has at hand, as `docker` takes a container's name or id.
import { isVmName } from "../app/vm-identity";
import { SessionNotFoundError, VmNotFoundError, type SandboxClient } from "../sdk/index";

type Vm = Awaited<ReturnType<SandboxClient["vms"]["list"]>>["vms"][number];

function noSuchTarget(target: string): VmNotFoundError {
  return new VmNotFoundError(404, "VM_NOT_FOUND", `no VM or session named ${JSON.stringify(target)} — fix: see \`session-sandbox vms\` and \`session-sandbox sessions\``);
}

/** The session an argument names: itself, or the root of the VM of that name. */
export async function sessionOfTarget(client: SandboxClient, target: string, vms?: Vm[]): Promise<string> {
  const vm = (vms ?? (await client.vms.list()).vms).find((candidate) => candidate.name === target);
  if (vm?.rootSessionID) return vm.rootSessionID;
  try {
    return (await client.sessions.get(target)).id;
  } catch (error) {
    if (error instanceof SessionNotFoundError && isVmName(target)) throw noSuchTarget(target);
    throw error;
  }
}

/** The VM an argument names: itself when it is a VM's name, else the VM of that session's root. */
export async function vmOfTarget(client: SandboxClient, target: string): Promise<string> {
  if (isVmName(target)) return target;
  try {
    return (await client.sandbox.get(target)).vmName;
  } catch (error) {
    if (error instanceof SessionNotFoundError) throw noSuchTarget(target);
    throw error;
  }
}
