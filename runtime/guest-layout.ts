// Where things are inside every guest, whatever the runtime: the paths that the manager (a command's
// environment) and each driver (its mounts, the paths it reserves) must agree on.

/** The persistent data volume's mount point and the guest's HOME; it survives stop/start and recreation. */
export const GUEST_HOME = "/home/agent";
/** The guest's PATH, for every command and for the VM's own processes. */
export const GUEST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/**
 * The VM relay (runtime/local/vm-relay.c), bound read-only into every VM of the embedded tiers: their egress
 * forwarder, and the relay of a forwarded port (`connect <ip> <port>`), in any image. Absent from a VM made
 * before it existed, on a host that could not build it, and on the microVM tier: socat is used there.
 */
export const GUEST_RELAY = "/run/vm-relay";
/**
 * The Docker daemon's data root where the VM mounts one for it (a gVisor docker VM:
 * runtime/gvisor/docker-profile.ts); the guest helper (app/services/docker-helper.ts) uses it when mounted.
 */
export const GUEST_DOCKER_DATA_ROOT = "/var/lib/docker";
