// Where things are inside every guest, whatever the runtime: the paths that the manager (a command's
// environment) and each driver (its mounts, the paths it reserves) must agree on.

/** The persistent data volume's mount point and the guest's HOME; it survives stop/start and recreation. */
export const GUEST_HOME = "/home/agent";
/** The guest's PATH, for every command and for the VM's own processes. */
export const GUEST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
