// A FAKE RuntimeDriver that keeps its VMs and volumes in memory and runs no command: it exists so the
// actor, the registry and the supervisor can be tested as plain modules, deterministically and without
// sleeps. The real runtimes run the same suites elsewhere (test/runtime, test/actors). Commands it knows:
//   ["write", key, value]  stores value under key in the VM's volume       ["read", key]  prints it
//   ["block"]              runs until release() (exit 0) or its signal aborts (cancelled)
//   anything else          prints argv joined by spaces, exit 0
import { RuntimeError, type Capability, type ExecRequest, type ExecResult, type ExecSink, type RuntimeDriver, type VmInfo, type VmSpec } from "../../runtime/driver";
import { ensureVm } from "../../runtime/ensure";
import { attestStoredSpec } from "../../runtime/local/attest";

export type MemoryDriver = RuntimeDriver & {
  /** Every lifecycle call, e.g. "create vm-a", "create vm-a replace", "start vm-a", "stop vm-a". */
  calls: string[];
  volumes: Map<string, Map<string, string>>;
  /** The most VMs that were ever running at once. */
  maxRunning(): number;
  running(): string[];
  /** Ends every blocked command with exit 0. */
  release(): void;
  /** Makes the next call of `operation` fail with this error. */
  failNext(operation: "create" | "start" | "stop" | "remove" | "exec", error: RuntimeError): void;
  /** Makes the next call of `operation` wait until the returned function is called; `entered` resolves once it waits. */
  holdNext(operation: "create" | "remove"): { entered: Promise<void>; release(): void };
  /** Deletes a VM behind the manager's back (as an operator's `crun delete` would). */
  vanish(name: string): void;
};

const encoder = new TextEncoder();

export function createMemoryDriver(): MemoryDriver {
  const vms = new Map<string, VmInfo>();
  const volumes = new Map<string, Map<string, string>>();
  const calls: string[] = [];
  const blocked = new Set<() => void>();
  const failures = new Map<string, RuntimeError>();
  let maxRunning = 0;

  const running = () => [...vms.values()].filter((vm) => vm.status === "running").map((vm) => vm.name);
  function setStatus(vm: VmInfo, status: VmInfo["status"]): void {
    vm.status = status;
    maxRunning = Math.max(maxRunning, running().length);
  }
  const holds = new Map<string, { entered: PromiseWithResolvers<void>; released: PromiseWithResolvers<void> }>();
  async function waitIfHeld(operation: string): Promise<void> {
    const hold = holds.get(operation);
    if (!hold) return;
    holds.delete(operation);
    hold.entered.resolve();
    await hold.released.promise;
  }
  function failIfAsked(operation: string): void {
    const error = failures.get(operation);
    if (!error) return;
    failures.delete(operation);
    throw error;
  }

  async function create(spec: VmSpec, options: { replace?: boolean } = {}): Promise<VmInfo> {
    calls.push(`create ${spec.name}${options.replace ? " replace" : ""}`);
    await waitIfHeld("create");
    failIfAsked("create");
    if (vms.has(spec.name) && !options.replace) throw new RuntimeError("ALREADY_EXISTS", `VM ${spec.name} already exists`);
    if (!volumes.has(spec.volume.name)) volumes.set(spec.volume.name, new Map());
    const vm: VmInfo = { name: spec.name, status: "stopped", spec: structuredClone(spec), createdAt: Date.now() };
    vms.set(spec.name, vm);
    setStatus(vm, "running");
    return structuredClone(vm);
  }

  function runCommand(vm: VmInfo, request: ExecRequest, sink: ExecSink): Promise<ExecResult> {
    const [program, key = "", value = ""] = request.argv;
    const volume = volumes.get(vm.spec.volume.name)!;
    if (program === "write") {
      volume.set(key, value);
      return Promise.resolve({ exitCode: 0, timedOut: false, cancelled: false });
    }
    if (program === "read") {
      sink.stdout(encoder.encode(volume.get(key) ?? ""));
      return Promise.resolve({ exitCode: volume.has(key) ? 0 : 1, timedOut: false, cancelled: false });
    }
    if (program === "block") {
      return new Promise((resolve) => {
        const finish = () => {
          blocked.delete(finish);
          resolve({ exitCode: 0, timedOut: false, cancelled: false });
        };
        blocked.add(finish);
        request.signal?.addEventListener("abort", () => {
          blocked.delete(finish);
          resolve({ exitCode: 130, timedOut: false, cancelled: true });
        });
      });
    }
    sink.stdout(encoder.encode(request.argv.join(" ")));
    return Promise.resolve({ exitCode: 0, timedOut: false, cancelled: false });
  }

  const driver: MemoryDriver = {
    name: "local",
    probe: async (): Promise<Capability> => ({ available: true, version: "memory (a fake)", problems: [] }),
    ping: async () => true,
    ensure: (spec) => ensureVm(driver, spec),
    attest: attestStoredSpec,
    create,
    async start(name) {
      calls.push(`start ${name}`);
      failIfAsked("start");
      const vm = vms.get(name);
      if (!vm) throw new RuntimeError("NOT_FOUND", `VM ${name} does not exist`);
      setStatus(vm, "running");
    },
    async stop(name) {
      calls.push(`stop ${name}`);
      failIfAsked("stop");
      const vm = vms.get(name);
      if (vm) setStatus(vm, "stopped");
    },
    async remove(name, options) {
      calls.push(`remove ${name}${options?.keepVolume ? " keep-volume" : ""}`);
      await waitIfHeld("remove");
      failIfAsked("remove");
      const vm = vms.get(name);
      vms.delete(name);
      if (vm && !options?.keepVolume) volumes.delete(vm.spec.volume.name);
    },
    async exec(name, request, sink) {
      failIfAsked("exec");
      const vm = vms.get(name);
      if (!vm) throw new RuntimeError("NOT_FOUND", `VM ${name} does not exist`);
      if (vm.status !== "running") throw new RuntimeError("FAILED", `VM ${name} is not running`);
      return runCommand(vm, request, sink);
    },
    inspect: async (name) => {
      const vm = vms.get(name);
      return vm && structuredClone(vm);
    },
    list: async (labels) => [...vms.values()].filter((vm) => Object.entries(labels).every(([k, v]) => vm.spec.labels[k] === v)).map((vm) => structuredClone(vm)),
    listVolumes: async () => [...volumes.keys()],
    removeVolume: async (name) => void volumes.delete(name),
    calls,
    volumes,
    maxRunning: () => maxRunning,
    running,
    release: () => {
      for (const finish of [...blocked]) finish();
    },
    failNext: (operation, error) => void failures.set(operation, error),
    holdNext: (operation) => {
      const hold = { entered: Promise.withResolvers<void>(), released: Promise.withResolvers<void>() };
      holds.set(operation, hold);
      return { entered: hold.entered.promise, release: () => hold.released.resolve() };
    },
    vanish: (name) => void vms.delete(name),
  };
  return driver;
}

export function memorySpec(name: string, overrides: Partial<VmSpec> = {}): VmSpec {
  return {
    name,
    image: "/images/memory",
    cpus: 1,
    memoryMib: 256,
    mounts: [],
    tmpSizeMib: 32,
    volume: { name },
    labels: { "session-sandbox.root": `root-of-${name}` },
    network: { mode: "none" },
    ...overrides,
  };
}
