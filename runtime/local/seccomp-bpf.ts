// Compiles the VM's seccomp profile into the classic BPF program the kernel runs, so crun loads it as raw
// data (annotation `run.oci.seccomp_bpf_data`) instead of compiling the profile with the host's libseccomp.
// Why: crun drops a rule naming a syscall the host's libseccomp does not know with a mere warning
// ("unknown seccomp syscall ... ignored"), and what it knows depends on the host: Debian 12's libseccomp
// 2.5.4-1 stops at Linux 5.17 (no fchmodat2, so setuid bits could be set through it), its 2024 update
// 2.5.4-1+deb12u1 at 6.7 (no open_tree_attr, 6.15), while the kernel here is 6.18. Compiled here, the
// filter is the same on every host, and every number comes from the table below.
//
// The program mirrors libseccomp's: check the audit arch (any other ABI, i386 included, is killed), on
// x86_64 kill the x32 ABI (syscall numbers with bit 30 set, except -1 which tracers use to skip a call),
// then per syscall try its rules in order (arguments compared as unsigned 64-bit) and allow when none matches.
import type { SeccompArg, SeccompProfile, SeccompRule } from "./seccomp-profile";

/** The annotation crun reads the program from (base64); it then ignores `linux.seccomp`. */
export const SECCOMP_BPF_ANNOTATION = "run.oci.seccomp_bpf_data";

/**
 * Kernel syscall numbers [x86_64, aarch64] of every name the profile uses; null where the ABI has no such
 * call (arm64 has only the *at forms). Checked against libseccomp's table (Linux 7.1) and <asm/unistd_64.h>.
 * Exported for the test's BPF interpreter.
 */
export const SYSCALL_NUMBERS: Record<string, readonly [number | null, number | null]> = {
  mount: [165, 40], umount2: [166, 39], pivot_root: [155, 41], setns: [308, 268], fsopen: [430, 430],
  fsmount: [432, 432], fsconfig: [431, 431], fspick: [433, 433], move_mount: [429, 429], open_tree: [428, 428],
  mount_setattr: [442, 442], init_module: [175, 105], finit_module: [313, 273], delete_module: [176, 106],
  kexec_load: [246, 104], kexec_file_load: [320, 294], reboot: [169, 142], swapon: [167, 224], swapoff: [168, 225],
  acct: [163, 89], keyctl: [250, 219], add_key: [248, 217], request_key: [249, 218], bpf: [321, 280],
  perf_event_open: [298, 241], userfaultfd: [323, 282], io_uring_setup: [425, 425], io_uring_enter: [426, 426],
  io_uring_register: [427, 427], open_by_handle_at: [304, 265], name_to_handle_at: [303, 264], syslog: [103, 116],
  quotactl: [179, 60], lookup_dcookie: [212, 18], unshare: [272, 97], clone: [56, 220], clone3: [435, 435],
  socket: [41, 198], socketpair: [53, 199], chmod: [90, null], fchmod: [91, 52], fchmodat: [268, 53], fchmodat2: [452, 452],
  open: [2, null], openat: [257, 56], openat2: [437, 437], creat: [85, null], mknod: [133, null], mknodat: [259, 33],
  open_tree_attr: [467, 467],
};

const ARCHES: Record<string, { auditArch: number; column: 0 | 1; x32: boolean }> = {
  SCMP_ARCH_X86_64: { auditArch: 0xc000003e, column: 0, x32: true },
  SCMP_ARCH_AARCH64: { auditArch: 0xc00000b7, column: 1, x32: false },
};

/** Exported, with BPF, for the test's BPF interpreter, which runs the compiled filter. */
export const SECCOMP_RET = { killProcess: 0x80000000, errno: 0x00050000, allow: 0x7fff0000 } as const;
export const BPF = { ldAbs: 0x20, jeq: 0x15, jgt: 0x25, jge: 0x35, and: 0x54, ja: 0x05, ret: 0x06 } as const;
/** Offsets in struct seccomp_data (little-endian: an argument's low word comes first). */
const NR = 0;
const ARCH = 4;
const argLow = (index: number) => 16 + 8 * index;
const X32_SYSCALL_BIT = 0x40000000;
const MAX_INSNS = 4096;

type Insn = { code: number; k: number; jt?: string; jf?: string };

/** A tiny assembler: instructions with symbolic jump targets, resolved to 8-bit forward offsets. */
class Assembler {
  private readonly items: (Insn | { label: string })[] = [];
  private count = 0;
  label(): string {
    return `L${this.count++}`;
  }
  mark(label: string): void {
    this.items.push({ label });
  }
  emit(code: number, k: number, jt?: string, jf?: string): void {
    this.items.push({ code, k, jt, jf });
  }
  bytes(): Buffer {
    const at = new Map<string, number>();
    const insns: Insn[] = [];
    for (const item of this.items) {
      if ("label" in item) at.set(item.label, insns.length);
      else insns.push(item);
    }
    if (insns.length > MAX_INSNS) throw new Error(`seccomp program has ${insns.length} instructions (kernel limit ${MAX_INSNS})`);
    const out = Buffer.alloc(insns.length * 8);
    insns.forEach((insn, i) => {
      const offset = (label?: string) => {
        if (label === undefined) return 0;
        const distance = at.get(label)! - (i + 1);
        if (!(distance >= 0 && distance <= 255)) throw new Error(`seccomp jump of ${distance} instructions does not fit`);
        return distance;
      };
      out.writeUInt16LE(insn.code, i * 8);
      out.writeUInt8(offset(insn.jt), i * 8 + 2);
      out.writeUInt8(offset(insn.jf), i * 8 + 3);
      out.writeUInt32LE(insn.k >>> 0, i * 8 + 4);
    });
    return out;
  }
}

function words(value: number): { high: number; low: number } {
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`seccomp argument value ${value} is not an unsigned integer`);
  return { high: Math.floor(value / 2 ** 32), low: value % 2 ** 32 };
}

/** Falls through when the argument matches, jumps to `fail` otherwise. */
function compare(asm: Assembler, arg: SeccompArg, fail: string): void {
  const low = argLow(arg.index);
  const high = low + 4;
  const value = words(arg.value);
  if (arg.op === "SCMP_CMP_MASKED_EQ") {
    const datum = words(arg.valueTwo);
    if (value.high !== 0 || datum.high !== 0) {
      asm.emit(BPF.ldAbs, high);
      asm.emit(BPF.and, value.high);
      asm.emit(BPF.jeq, datum.high, undefined, fail);
    }
    asm.emit(BPF.ldAbs, low);
    asm.emit(BPF.and, value.low);
    asm.emit(BPF.jeq, datum.low, undefined, fail);
  } else if (arg.op === "SCMP_CMP_EQ") {
    asm.emit(BPF.ldAbs, high);
    asm.emit(BPF.jeq, value.high, undefined, fail);
    asm.emit(BPF.ldAbs, low);
    asm.emit(BPF.jeq, value.low, undefined, fail);
  } else {
    const pass = asm.label();
    asm.emit(BPF.ldAbs, high);
    asm.emit(BPF.jgt, value.high, pass);
    asm.emit(BPF.jeq, value.high, undefined, fail);
    asm.emit(BPF.ldAbs, low);
    asm.emit(BPF.jge, value.low, undefined, fail);
    asm.mark(pass);
  }
}

/** Each syscall's rules, in profile order. */
function rulesBySyscall(profile: SeccompProfile): Map<string, SeccompRule[]> {
  const bySyscall = new Map<string, SeccompRule[]>();
  for (const rule of profile.syscalls) {
    for (const name of rule.names) {
      if (!(name in SYSCALL_NUMBERS)) throw new Error(`no syscall number for "${name}": add it to SYSCALL_NUMBERS`);
      bySyscall.set(name, [...(bySyscall.get(name) ?? []), rule]);
    }
  }
  return bySyscall;
}

export function compileSeccomp(profile: SeccompProfile): Buffer {
  if (profile.architectures.length !== 1) throw new Error("the seccomp compiler handles exactly one (native) architecture");
  const arch = ARCHES[profile.architectures[0]!];
  if (!arch) throw new Error(`unsupported seccomp architecture ${profile.architectures[0]}`);
  const asm = new Assembler();
  const archOk = asm.label();
  const body = asm.label();
  asm.emit(BPF.ldAbs, ARCH);
  asm.emit(BPF.jeq, arch.auditArch, archOk);
  asm.emit(BPF.ret, SECCOMP_RET.killProcess);
  asm.mark(archOk);
  asm.emit(BPF.ldAbs, NR);
  if (arch.x32) {
    asm.emit(BPF.jge, X32_SYSCALL_BIT, undefined, body);
    asm.emit(BPF.jeq, 0xffffffff, body);
    asm.emit(BPF.ret, SECCOMP_RET.killProcess);
  }
  asm.mark(body);
  for (const [name, rules] of rulesBySyscall(profile)) {
    const nr = SYSCALL_NUMBERS[name]![arch.column];
    if (nr === null) continue;
    const next = asm.label();
    asm.emit(BPF.jeq, nr, undefined, next);
    for (const rule of rules) {
      const fail = asm.label();
      for (const arg of rule.args ?? []) compare(asm, arg, fail);
      asm.emit(BPF.ret, SECCOMP_RET.errno | (rule.errnoRet & 0xffff));
      asm.mark(fail);
    }
    asm.emit(BPF.ret, SECCOMP_RET.allow);
    asm.mark(next);
  }
  asm.emit(BPF.ret, SECCOMP_RET.allow);
  return asm.bytes();
}
