// The VM's egress proxy socket belongs to the VM: 0660, owned by the VM's host uid, so that only this
// VM (and root) may connect — not another VM's uid, nor any other local user. The manager creates the
// socket root-only (it does not know the VM's uid); the driver hands it over at every start and exec,
// which also covers a proxy re-created while the VM runs (e.g. after a manager restart).
import { chmodSync, chownSync, lstatSync } from "node:fs";
import { RuntimeError } from "../driver";

export function handEgressSocketToVm(socket: string, hostUidBase: number): void {
  try {
    const stats = lstatSync(socket);
    if (!stats.isSocket()) throw new Error("it is not a socket");
    if (stats.uid === hostUidBase && (stats.mode & 0o777) === 0o660) return;
    chownSync(socket, hostUidBase, hostUidBase);
    chmodSync(socket, 0o660);
  } catch (error) {
    throw new RuntimeError("FAILED", `the egress proxy socket ${socket} could not be handed to the VM, so nothing ran: ${(error as Error).message}`);
  }
}
