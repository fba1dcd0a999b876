// The seccomp filter every VM process runs under: a denylist on top of "no capabilities".
//
// Capabilities already stop mount, module loading, raw I/O etc. inside the VM's user namespace; the
// one thing an unprivileged process may still do there is create a *nested* user namespace and become
// "root" in it, which reopens that kernel surface (the research measured it allowed by default). So:
// clone/unshare with CLONE_NEWUSER fail with EPERM, and clone3 — whose flags sit in a struct seccomp
// cannot inspect — fails with ENOSYS so libc falls back to clone. The rest are kernel interfaces with
// a history of exploits and no use in a coding sandbox, denied as defence in depth.

const CLONE_NEWUSER = 0x10000000;
const EPERM = 1;
const ENOSYS = 38;

type SeccompArg = { index: number; value: number; valueTwo: number; op: "SCMP_CMP_MASKED_EQ" };
type SeccompRule = { names: string[]; action: "SCMP_ACT_ERRNO"; errnoRet: number; args?: SeccompArg[] };
export type SeccompProfile = { defaultAction: "SCMP_ACT_ALLOW"; architectures: string[]; syscalls: SeccompRule[] };

const DENIED = [
  // Mounting and namespaces (also blocked by missing capabilities; deny without asking the LSM).
  "mount", "umount2", "pivot_root", "setns", "fsopen", "fsmount", "fsconfig", "fspick", "move_mount", "open_tree",
  "mount_setattr",
  // Kernel modules, kexec, reboot, swap, accounting.
  "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "acct",
  // Keyrings are not namespaced; bpf, perf and userfaultfd/io_uring are frequent exploit primitives.
  "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
  "io_uring_setup", "io_uring_enter", "io_uring_register",
  // Host file handles bypass the mount namespace; syslog reads the host kernel log.
  "open_by_handle_at", "name_to_handle_at", "syslog", "quotactl", "lookup_dcookie",
];

/** libseccomp names for the host's native ABIs; listing only these makes foreign-ABI syscalls fail. */
function architectures(): string[] {
  return process.arch === "arm64" ? ["SCMP_ARCH_AARCH64"] : ["SCMP_ARCH_X86_64"];
}

export function seccompProfile(): SeccompProfile {
  const newUser: SeccompArg[] = [{ index: 0, value: CLONE_NEWUSER, valueTwo: CLONE_NEWUSER, op: "SCMP_CMP_MASKED_EQ" }];
  return {
    defaultAction: "SCMP_ACT_ALLOW",
    architectures: architectures(),
    syscalls: [
      { names: DENIED, action: "SCMP_ACT_ERRNO", errnoRet: EPERM },
      { names: ["unshare", "clone"], action: "SCMP_ACT_ERRNO", errnoRet: EPERM, args: newUser },
      { names: ["clone3"], action: "SCMP_ACT_ERRNO", errnoRet: ENOSYS },
    ],
  };
}
