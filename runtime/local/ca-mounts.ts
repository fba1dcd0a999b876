// The VM's CA bundle (VmSpec.caBundle): read-only at GUEST_CA_BUNDLE, and over the image's own system
// store so that tools reading the default path trust the manager CA too.
import { GUEST_CA_BUNDLE, GUEST_SYSTEM_CA_BUNDLE, type VmSpec } from "../driver";
import type { GuestRootPlan } from "./guest-root";
import type { OciMount } from "./oci-config";
import { resolveFileInRoot } from "./rootfs";

/** A file, so no idmap and no recursive flags (crun 1.8.1 opens those targets as directories; see oci-config.ts). */
const READ_ONLY_FILE = ["bind", "ro", "nosuid", "nodev"];

/**
 * The store is mounted at the path its symlinks lead to inside the image (crun is never asked to follow
 * one), and only when that lies in a directory the VM sees from the image: a link into the VM's own
 * /run, /tmp or /home names nothing there.
 */
export function caBundleMounts(spec: VmSpec, plan: GuestRootPlan): OciMount[] {
  if (!spec.caBundle) return [];
  const mounts: OciMount[] = [{ destination: GUEST_CA_BUNDLE, type: "bind", source: spec.caBundle, options: READ_ONLY_FILE }];
  const system = resolveFileInRoot(spec.image, GUEST_SYSTEM_CA_BUNDLE);
  if (system && plan.imageDirs.includes(system.split("/")[1]!)) {
    mounts.push({ destination: system, type: "bind", source: spec.caBundle, options: READ_ONLY_FILE });
  }
  return mounts;
}
