// Rejects a VmSpec the local runtime cannot honour, with a message that says what to change.
import { fileExistsInRoot } from "./rootfs";
import { existsSync, lstatSync, realpathSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { egressSocketOf, MIN_DISK_MIB, RuntimeError, TRUST_BUNDLE_FILE, type VmSpec } from "../driver";
import { isValidName } from "./state-paths";

function fail(message: string): never {
  throw new RuntimeError("FAILED", message);
}

function overlaps(a: string, b: string): boolean {
  const within = (x: string, y: string) => x === y || x.startsWith(y.endsWith("/") ? y : `${y}/`);
  return within(a, b) || within(b, a);
}

export function validateSpec(spec: VmSpec, stateDir: string): void {
  if (!isValidName(spec.name)) fail(`invalid VM name ${JSON.stringify(spec.name)}: use [A-Za-z0-9._-], at most 63 characters`);
  if (!isValidName(spec.volume.name)) fail(`invalid volume name ${JSON.stringify(spec.volume.name)}: use [A-Za-z0-9._-], at most 63 characters`);
  if (!(spec.cpus > 0 && Number.isFinite(spec.cpus))) fail(`cpus must be a positive number, got ${spec.cpus}`);
  if (!Number.isInteger(spec.memoryMib) || spec.memoryMib < 32) fail(`memoryMib must be an integer ≥ 32, got ${spec.memoryMib}`);
  if (!Number.isInteger(spec.tmpSizeMib) || spec.tmpSizeMib < 1) fail(`tmpSizeMib must be an integer ≥ 1, got ${spec.tmpSizeMib}`);
  if (spec.diskMib !== undefined && (!Number.isInteger(spec.diskMib) || spec.diskMib < MIN_DISK_MIB)) {
    fail(`diskMib must be an integer ≥ ${MIN_DISK_MIB}, got ${spec.diskMib}`);
  }
  const egressSocket = egressSocketOf(spec);
  if (spec.network.mode !== "none" && (!egressSocket || !egressSocket.startsWith("/"))) {
    fail(`network policy "${spec.network.mode}" needs an egress proxy socket (tierPart.egressSocket, an absolute host path): the local runtime has no other route out`);
  }
  if (spec.trustDir !== undefined && (!isAbsolute(spec.trustDir) || !fileExistsInRoot(spec.trustDir, TRUST_BUNDLE_FILE))) {
    fail(`trust directory ${spec.trustDir} is not an absolute host path holding ${TRUST_BUNDLE_FILE}`);
  }
  if (!isAbsolute(spec.image) || !fileExistsInRoot(spec.image, "/bin/sh")) {
    fail(`image ${spec.image} is not a root filesystem directory (no /bin/sh); build one with scripts/build-rootfs.sh`);
  }
  const state = realpathSync(stateDir);
  for (const mount of spec.mounts) {
    const path = mount.hostPath;
    if (!isAbsolute(path) || resolve(path) !== path) fail(`mount path ${path} must be absolute and normalized`);
    const kind = mount.kind ?? "directory";
    const stats = existsSync(path) ? lstatSync(path) : undefined;
    if (!stats || (kind === "file" ? !stats.isFile() : !stats.isDirectory())) fail(`mount path ${path} is not an existing ${kind}`);
    // Also through symlinks: the guest must never see the driver's own state.
    if (overlaps(realpathSync(path), state)) fail(`mount path ${path} overlaps the runtime's state directory`);
    if (realpathSync(path) !== path) fail(`mount path ${path} goes through a symlink; pass ${realpathSync(path)}`);
  }
}
