// The VM's trust directory (VmSpec.trustDir): read-only at GUEST_TRUST_DIR, and its bundle over the
// image's own system store so that tools reading the default path trust the manager CA too.
import { join } from "node:path";
import { GUEST_SYSTEM_CA_BUNDLE, GUEST_TRUST_DIR, TRUST_BUNDLE_FILE, type VmSpec } from "../driver";
import type { GuestRootPlan } from "./guest-root";
import type { OciMount } from "./oci-config";
import { resolveFileInRoot } from "./rootfs";

/**
 * A directory of the manager's (root-owned, 0755), shown as is: no idmap needed to read it. The store is
 * a file, so no idmap and no recursive flags (crun 1.8.1 opens those targets as directories; see oci-config.ts).
 */
const READ_ONLY_DIR = ["bind", "ro", "nosuid", "nodev", "noexec"];
const READ_ONLY_FILE = ["bind", "ro", "nosuid", "nodev"];

/**
 * The store is mounted at the path its symlinks lead to inside the image (crun is never asked to follow
 * one), and only when that lies in a directory the VM sees from the image: a link into the VM's own
 * /run, /tmp or /home names nothing there.
 */
export function trustMounts(spec: VmSpec, plan: GuestRootPlan): OciMount[] {
  if (!spec.trustDir) return [];
  const mounts: OciMount[] = [{ destination: GUEST_TRUST_DIR, type: "bind", source: spec.trustDir, options: READ_ONLY_DIR }];
  const system = resolveFileInRoot(spec.image, GUEST_SYSTEM_CA_BUNDLE);
  if (system && plan.imageDirs.includes(system.split("/")[1]!)) {
    mounts.push({ destination: system, type: "bind", source: join(spec.trustDir, TRUST_BUNDLE_FILE), options: READ_ONLY_FILE });
  }
  return mounts;
}
