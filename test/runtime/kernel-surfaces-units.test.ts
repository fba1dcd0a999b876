// Pure parts of the kernel-surface defences: the seccomp compiler (run in a BPF interpreter here, against
// the profile's meaning), the inotify hook's script and the host-limit check. The real VMs are in
// test/attacks/kernel-surfaces.test.ts.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { buildOciConfig } from "../../runtime/local/oci-config";
import { withStartupFindings } from "../../workers/protocol";
import { BPF, compileSeccomp, SECCOMP_BPF_ANNOTATION, SECCOMP_RET, SYSCALL_NUMBERS } from "../../runtime/local/seccomp-bpf";
import { seccompProfile, type SeccompProfile } from "../../runtime/local/seccomp-profile";
import { hostInotifyNeed, inotifyHostCheck, PLANNED_VMS, VM_INOTIFY_INSTANCES, vmInotifyHook } from "../../runtime/local/inotify-limits";

const AUDIT_ARCH = { x86_64: 0xc000003e, i386: 0x40000003, aarch64: 0xc00000b7 };
const ERRNO = (errno: number) => SECCOMP_RET.errno | errno;
type Call = { arch: number; nr: number; args: bigint[] };

/** A classic-BPF interpreter for the instructions the compiler emits, over a struct seccomp_data. */
function runFilter(program: Buffer, call: Call): number {
  const data = Buffer.alloc(64);
  data.writeUInt32LE(call.nr >>> 0, 0);
  data.writeUInt32LE(call.arch >>> 0, 4);
  call.args.forEach((arg, i) => data.writeBigUInt64LE(BigInt.asUintN(64, arg), 16 + 8 * i));
  let a = 0;
  for (let pc = 0; pc < program.length / 8; ) {
    const [code, jt, jf, k] = [program.readUInt16LE(pc * 8), program.readUInt8(pc * 8 + 2), program.readUInt8(pc * 8 + 3), program.readUInt32LE(pc * 8 + 4)];
    const jump = (taken: boolean) => (pc += 1 + (taken ? jt : jf));
    if (code === BPF.ldAbs) (a = data.readUInt32LE(k)), pc++;
    else if (code === BPF.and) (a = (a & k) >>> 0), pc++;
    else if (code === BPF.jeq) jump(a === k);
    else if (code === BPF.jgt) jump(a > k);
    else if (code === BPF.jge) jump(a >= k);
    else if (code === BPF.ja) pc += 1 + k;
    else if (code === BPF.ret) return k;
    else throw new Error(`unexpected BPF opcode ${code}`);
  }
  throw new Error("the program ran off its end");
}

/** What the profile means (OCI/libseccomp semantics), written independently of the compiler. */
function expected(profile: SeccompProfile, call: Call): number {
  if (call.arch !== AUDIT_ARCH.x86_64) return SECCOMP_RET.killProcess;
  if (call.nr >= 0x40000000 && call.nr !== 0xffffffff) return SECCOMP_RET.killProcess;
  const arg = (i: number) => BigInt.asUintN(64, call.args[i] ?? 0n);
  for (const rule of profile.syscalls.filter((r) => r.names.some((name) => SYSCALL_NUMBERS[name]![0] === call.nr))) {
    const matches = (rule.args ?? []).every(({ index, value, valueTwo, op }) =>
      op === "SCMP_CMP_EQ" ? arg(index) === BigInt(value) : op === "SCMP_CMP_GE" ? arg(index) >= BigInt(value) : (arg(index) & BigInt(value)) === BigInt(valueTwo),
    );
    if (matches) return ERRNO(rule.errnoRet);
  }
  return SECCOMP_RET.allow;
}

const profile = { ...seccompProfile(), architectures: ["SCMP_ARCH_X86_64"] };
const program = compileSeccomp(profile);
const call = (nr: number, ...args: (number | bigint)[]): Call => ({ arch: AUDIT_ARCH.x86_64, nr, args: args.map(BigInt) });

describe("seccomp compiler", () => {
  test("socket, socketpair: AF_VSOCK, AF_PACKET, AF_ALG, AF_KEY, AF_TIPC, 0, upper-bit tricks → EAFNOSUPPORT; UNIX, INET, INET6, NETLINK → allowed", () => {
    for (const family of [40, 17, 38, 15, 0, 3, 9, 11, 64, 2 ** 32 + 1, 2n ** 63n + 2n, -1]) expect(runFilter(program, call(41, family, 1, 0))).toBe(ERRNO(97));
    for (const family of [1, 2, 10, 16]) expect(runFilter(program, call(41, family, 1, 0))).toBe(SECCOMP_RET.allow);
    expect(runFilter(program, call(53, 30, 5, 0, 0))).toBe(ERRNO(97)); // socketpair(AF_TIPC)
    expect(runFilter(program, call(53, 1, 1, 0, 0))).toBe(SECCOMP_RET.allow); // socketpair(AF_UNIX)
  });

  test("setuid/setgid bits: chmod family, fchmodat2 (452) and creation with a mode → EPERM; plain modes → allowed", () => {
    for (const mode of [0o4755, 0o2755, 0o6000, 0o104755]) {
      expect(runFilter(program, call(90, 0, mode))).toBe(ERRNO(1)); // chmod
      expect(runFilter(program, call(91, 3, mode))).toBe(ERRNO(1)); // fchmod
      expect(runFilter(program, call(268, -100, 0, mode))).toBe(ERRNO(1)); // fchmodat
      expect(runFilter(program, call(452, -100, 0, mode, 0))).toBe(ERRNO(1)); // fchmodat2
      expect(runFilter(program, call(257, -100, 0, 0o101, mode))).toBe(ERRNO(1)); // openat O_CREAT
      expect(runFilter(program, call(257, -100, 0, 0o20200001, mode))).toBe(ERRNO(1)); // openat O_TMPFILE
      expect(runFilter(program, call(2, 0, 0o101, mode))).toBe(ERRNO(1)); // open O_CREAT
      expect(runFilter(program, call(85, 0, mode))).toBe(ERRNO(1)); // creat
      expect(runFilter(program, call(259, -100, 0, 0o100000 | mode, 0))).toBe(ERRNO(1)); // mknodat
    }
    for (const mode of [0o755, 0o644, 0o1777, 0o777]) {
      expect(runFilter(program, call(90, 0, mode))).toBe(SECCOMP_RET.allow);
      expect(runFilter(program, call(452, -100, 0, mode, 0))).toBe(SECCOMP_RET.allow);
      expect(runFilter(program, call(257, -100, 0, 0o101, mode))).toBe(SECCOMP_RET.allow);
    }
    // Without O_CREAT/O_TMPFILE the kernel ignores the mode, so stray bits there are harmless.
    expect(runFilter(program, call(257, -100, 0, 0o2, 0o4755))).toBe(SECCOMP_RET.allow);
    expect(runFilter(program, call(437, -100, 0, 0, 24))).toBe(ERRNO(38)); // openat2
  });

  test("other ABIs → killed: i386, x32 (bit 30), but nr -1 (a tracer's skip) passes like libseccomp's", () => {
    expect(runFilter(program, { ...call(41, 40), arch: AUDIT_ARCH.i386 })).toBe(SECCOMP_RET.killProcess);
    expect(runFilter(program, call(0x40000000 + 41, 40))).toBe(SECCOMP_RET.killProcess);
    expect(runFilter(program, call(0xffffffff))).toBe(SECCOMP_RET.allow);
  });

  test("the other denials → CLONE_NEWUSER, mount, bpf, clone3, open_tree_attr", () => {
    expect(runFilter(program, call(272, 0x10000000))).toBe(ERRNO(1));
    expect(runFilter(program, call(56, 0x10000000 | 0x11))).toBe(ERRNO(1));
    expect(runFilter(program, call(56, 0x11))).toBe(SECCOMP_RET.allow);
    expect(runFilter(program, call(165))).toBe(ERRNO(1));
    expect(runFilter(program, call(321))).toBe(ERRNO(1));
    expect(runFilter(program, call(435))).toBe(ERRNO(38));
    expect(runFilter(program, call(467))).toBe(ERRNO(1)); // open_tree_attr: newer than Debian 12's libseccomp knows
    expect(runFilter(program, call(0, 0, 0, 0))).toBe(SECCOMP_RET.allow);
  });

  test("any call → the compiled program agrees with the profile's meaning", () => {
    const numbers = [...new Set(Object.values(SYSCALL_NUMBERS).map(([x86]) => x86).filter((nr): nr is number => nr !== null))];
    const interesting = [0n, 1n, 2n, 10n, 16n, 17n, 40n, 0o101n, 0o4000n, 0o2000n, 0o4755n, 0o20200000n, 0x10000000n, 2n ** 32n + 1n, 2n ** 64n - 1n];
    const argument = fc.oneof(fc.constantFrom(...interesting), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), fc.bigInt({ min: 0n, max: 2n ** 32n - 1n }));
    const arch = fc.constantFrom(AUDIT_ARCH.x86_64, AUDIT_ARCH.x86_64, AUDIT_ARCH.i386, AUDIT_ARCH.aarch64);
    const nr = fc.oneof(fc.constantFrom(...numbers), fc.integer({ min: 0, max: 500 }), fc.constantFrom(0x40000000 + 2, 0xffffffff));
    fc.assert(
      fc.property(arch, nr, fc.array(argument, { minLength: 6, maxLength: 6 }), (a, n, args) => {
        const c = { arch: a, nr: n, args };
        expect(runFilter(program, c)).toBe(expected(profile, c));
      }),
      { numRuns: 20_000 },
    );
  });

  test("aarch64 → only the *at calls exist there; numbers from the arm64 table", () => {
    const arm = compileSeccomp({ ...profile, architectures: ["SCMP_ARCH_AARCH64"] });
    const armCall = (nr: number, ...args: number[]): Call => ({ arch: AUDIT_ARCH.aarch64, nr, args: args.map(BigInt) });
    expect(runFilter(arm, armCall(198, 40))).toBe(ERRNO(97)); // socket
    expect(runFilter(arm, armCall(452, -100, 0, 0o4755))).toBe(ERRNO(1)); // fchmodat2
    expect(runFilter(arm, armCall(56, -100, 0, 0o101, 0o4755))).toBe(ERRNO(1)); // openat
    expect(runFilter(arm, armCall(0x40000000 + 2))).toBe(SECCOMP_RET.allow); // no x32 on arm64
    expect(runFilter(arm, { ...armCall(198, 40), arch: AUDIT_ARCH.x86_64 })).toBe(SECCOMP_RET.killProcess);
  });

  test("a name without a number, or two architectures → refused at build time", () => {
    expect(() => compileSeccomp({ ...profile, syscalls: [{ names: ["no_such_call"], action: "SCMP_ACT_ERRNO", errnoRet: 1 }] })).toThrow(/SYSCALL_NUMBERS/);
    expect(() => compileSeccomp({ ...profile, architectures: ["SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"] })).toThrow(/exactly one/);
  });
});


describe("OCI config (kernel surfaces)", () => {
  test("config → carries the compiled seccomp program for crun and the per-VM inotify hook", () => {
    const config = buildOciConfig({
      spec: { name: "vm1", image: "/img", cpus: 1, memoryMib: 512, mounts: [], tmpSizeMib: 64, volume: { name: "v" }, labels: {}, network: { mode: "none" } },
      guestRoot: "/state/root",
      hostUidBase: 1 << 30,
      cgroupsPath: "/session-sandbox/x",
      pidsLimit: 100,
      initPath: "/usr/bin/tini-static",
      volumeData: "/state/vol",
      imageMounts: [],
    });
    expect(config.annotations[SECCOMP_BPF_ANNOTATION]).toBe(compileSeccomp(seccompProfile()).toString("base64"));
    expect(config.hooks.createContainer).toEqual([vmInotifyHook()]);
  });

  test("an actor's config carries the main thread's compile of that program; a fresh thread adopts it instead of compiling", async () => {
    const config = withStartupFindings({ kind: "local", stateDir: "/state" }, { available: true, version: "v", problems: [] });
    expect(config.kind === "local" && config.seccompProgram).toBe(compileSeccomp(seccompProfile()).toString("base64"));
    // A marker no compile yields: what the Worker then puts in a VM's config is what it was given.
    const worker = new Worker(new URL("../fixtures/adopt-seccomp-worker.ts", import.meta.url).href);
    const answer = new Promise<unknown>((resolve) => worker.addEventListener("message", (event) => resolve(event.data), { once: true }));
    worker.postMessage("c2VjY29tcC1tYXJrZXI=");
    expect(await answer).toBe("c2VjY29tcC1tYXJrZXI=");
    worker.terminate();
  });
});

describe("inotify limits", () => {
  test("hook → one sh in the VM's namespaces that writes both limits of its own user namespace", () => {
    const hook = vmInotifyHook();
    expect(hook.path).toBe("/bin/sh");
    // It reads crun's state from stdin first: exiting before crun has written it fails the boot (EPIPE).
    expect(hook.args).toEqual(["sh", "-c", `read -r _state; echo ${VM_INOTIFY_INSTANCES} > /proc/sys/user/max_inotify_instances && echo 65536 > /proc/sys/user/max_inotify_watches`]);
  });

  test("host limits below PLANNED_VMS × the per-VM limit + host needs → not ok, with the sysctl that fixes it", () => {
    const need = hostInotifyNeed();
    expect(need).toEqual({ instances: PLANNED_VMS * 128 + 128, watches: PLANNED_VMS * 65536 + 65536 });
    const low = inotifyHostCheck({ instances: 128, watches: need.watches });
    expect(low.ok).toBe(false);
    expect(low.fix).toContain(`sysctl -w fs.inotify.max_user_instances=${need.instances}`);
    expect(low.fix).not.toContain("max_user_watches");
    expect(inotifyHostCheck(need)).toMatchObject({ ok: true, fix: null });
  });
});
