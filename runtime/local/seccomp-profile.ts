// The seccomp filter every VM process runs under: a denylist on top of "no capabilities".
//
// Capabilities already stop mount, module loading, raw I/O etc. inside the VM's user namespace; the
// one thing an unprivileged process may still do there is create a *nested* user namespace and become
// "root" in it, which reopens that kernel surface (the research measured it allowed by default). So:
// clone/unshare with CLONE_NEWUSER fail with EPERM, and clone3 — whose flags sit in a struct seccomp
// cannot inspect — fails with ENOSYS so libc falls back to clone. The rest are kernel interfaces with
// a history of exploits and no use in a coding sandbox, denied as defence in depth.
//
// The kernel is shared, so two more surfaces are cut here (docs/runtime-local.md, "Kernel surfaces"):
// socket families a guest has no use for (AF_VSOCK reaches the hypervisor when the host is itself a VM),
// and setuid/setgid bits, which the idmapped repository mount would turn into host files of the repository
// owner that another host user could run. crun gets this profile compiled by seccomp-bpf.ts, not by the
// host's libseccomp, which may not know fchmodat2 or open_tree_attr (the rule would be dropped).

const CLONE_NEWUSER = 0x10000000;
const EPERM = 1;
const ENOSYS = 38;
const EAFNOSUPPORT = 97;

export type SeccompArg = { index: number; value: number; valueTwo: number; op: "SCMP_CMP_MASKED_EQ" | "SCMP_CMP_EQ" | "SCMP_CMP_GE" };
/** Within one rule the `args` comparisons are ANDed; a syscall's rules are tried in order, the first match wins. */
export type SeccompRule = { names: string[]; action: "SCMP_ACT_ERRNO"; errnoRet: number; args?: SeccompArg[] };
export type SeccompProfile = { defaultAction: "SCMP_ACT_ALLOW"; architectures: string[]; syscalls: SeccompRule[] };

const DENIED = [
  // Mounting and namespaces (also blocked by missing capabilities; deny without asking the LSM).
  "mount", "umount2", "pivot_root", "setns", "fsopen", "fsmount", "fsconfig", "fspick", "move_mount", "open_tree",
  "mount_setattr", "open_tree_attr",
  // Kernel modules, kexec, reboot, swap, accounting.
  "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "acct",
  // Keyrings are not namespaced; bpf, perf and userfaultfd/io_uring are frequent exploit primitives.
  "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
  "io_uring_setup", "io_uring_enter", "io_uring_register",
  // Host file handles bypass the mount namespace; syslog reads the host kernel log.
  "open_by_handle_at", "name_to_handle_at", "syslog", "quotactl", "lookup_dcookie",
];

/** The families a coding guest needs: AF_UNIX 1, AF_INET 2, AF_INET6 10, AF_NETLINK 16 (iproute2, glibc's getaddrinfo). */
const ALLOWED_SOCKET_FAMILIES = [1, 2, 10, 16];
const LOWEST_UNLISTED_FAMILY = 17;

/**
 * socket(2) and socketpair(2) fail with EAFNOSUPPORT — what a kernel without that family says — for every
 * family but the allowed ones: one rule for everything from 17 up (unsigned 64-bit, so also any value with
 * upper bits set), one per excluded value below it. socketpair too, because some families support it
 * (AF_TIPC does, and creating one loads its module).
 */
function socketRules(): SeccompRule[] {
  const rule = (op: SeccompArg["op"], value: number): SeccompRule => ({
    names: ["socket", "socketpair"],
    action: "SCMP_ACT_ERRNO",
    errnoRet: EAFNOSUPPORT,
    args: [{ index: 0, value, valueTwo: 0, op }],
  });
  const below = Array.from({ length: LOWEST_UNLISTED_FAMILY }, (_, family) => family).filter((f) => !ALLOWED_SOCKET_FAMILIES.includes(f));
  return [rule("SCMP_CMP_GE", LOWEST_UNLISTED_FAMILY), ...below.map((family) => rule("SCMP_CMP_EQ", family))];
}

const S_ISUID = 0o4000;
const S_ISGID = 0o2000;
// Same values on x86_64 and arm64 (asm-generic); O_TMPFILE is __O_TMPFILE | O_DIRECTORY, the first bit suffices.
const O_CREAT = 0o100;
const O_TMPFILE_BIT = 0o20000000;

/**
 * No setuid or setgid bit can be set from the guest. Guest root is the repository owner on disk (idmapped
 * mount), so such a file is a host setuid/setgid file of that owner, which another host user could run;
 * `nosuid` on our bind does not help, since that user runs it through the host's own mount. Every way to
 * set the bits is covered: the chmod family (mode in arg 1 or 2) and creation with a mode — open/openat
 * with O_CREAT or O_TMPFILE, creat, mknod(at) of a regular file. openat2 carries its mode in a struct
 * seccomp cannot read, so it gets ENOSYS and libc falls back to openat. mkdir needs no rule: the kernel
 * keeps only the permission and sticky bits of its mode, and a setgid directory (inherited from a setgid
 * parent) is harmless anyway — it only makes new files inherit the directory's group. Seccomp cannot tell
 * a directory from a file, so `chmod g+s dir` is refused too.
 */
function setuidRules(): SeccompRule[] {
  const bit = (index: number, mask: number): SeccompArg => ({ index, value: mask, valueTwo: mask, op: "SCMP_CMP_MASKED_EQ" });
  const deny = (names: string[], ...args: SeccompArg[]): SeccompRule => ({ names, action: "SCMP_ACT_ERRNO", errnoRet: EPERM, args });
  return [S_ISUID, S_ISGID].flatMap((mode) => [
    deny(["chmod", "fchmod", "creat", "mknod"], bit(1, mode)),
    deny(["fchmodat", "fchmodat2", "mknodat"], bit(2, mode)),
    ...[O_CREAT, O_TMPFILE_BIT].flatMap((flag) => [deny(["open"], bit(1, flag), bit(2, mode)), deny(["openat"], bit(2, flag), bit(3, mode))]),
  ]);
}

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
      { names: ["clone3", "openat2"], action: "SCMP_ACT_ERRNO", errnoRet: ENOSYS },
      ...socketRules(),
      ...setuidRules(),
    ],
  };
}
