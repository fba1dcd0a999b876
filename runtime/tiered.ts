// One driver over the isolation tiers that work on this host: each VM runs on the driver of the tier its
// spec names (spec.isolation, else the default tier), and a VM whose session moved to another tier is
// moved with the same contract — removed from the tier that holds it, then created on the new one. The
// actors keep driving one RuntimeDriver; which tier holds a VM is the runtimes' own truth (inspect).
//
// Tiers keep their own volumes (an ext4 image on the embedded tiers, an msb named volume on microvm), so a
// session that changes tier starts with the new tier's home volume; its old tier's volume is kept (a
// move back finds it) until the VM is removed, which removes it on every tier.
import type { Attestation, Capability, EnsureResult, RuntimeDriver, VmInfo, VmSpec } from "./driver";
import { RuntimeError } from "./driver";
import { ISOLATION_TIERS, type IsolationTier } from "./isolation";

export type TierDrivers = Partial<Record<IsolationTier, RuntimeDriver>>;

/** The tiers that hold a VM named `name`, strongest first (normally one; two after a crash mid-move). */
async function holders(drivers: TierDrivers, name: string): Promise<{ tier: IsolationTier; info: VmInfo }[]> {
  const found = await Promise.all(
    tiersOf(drivers).map(async (tier) => {
      const info = await drivers[tier]!.inspect(name);
      return info ? { tier, info } : undefined;
    }),
  );
  return found.filter((entry): entry is { tier: IsolationTier; info: VmInfo } => entry !== undefined);
}

function tiersOf(drivers: TierDrivers): IsolationTier[] {
  return [...ISOLATION_TIERS].reverse().filter((tier) => drivers[tier] !== undefined);
}

/** The VM as the tier reports it, with the tier written into its spec (a runtime does not store it). */
function withTier(info: VmInfo, tier: IsolationTier): VmInfo {
  return { ...info, spec: { ...info.spec, isolation: tier } };
}

export function createTieredDriver(drivers: TierDrivers, defaultTier: IsolationTier): RuntimeDriver {
  const tierFor = (spec: VmSpec): IsolationTier => spec.isolation ?? defaultTier;
  function driverFor(tier: IsolationTier): RuntimeDriver {
    const driver = drivers[tier];
    if (!driver) throw new RuntimeError("UNAVAILABLE", `isolation tier ${tier} does not work on this host; see GET /api/health (tiers) or \`bun run doctor\``);
    return driver;
  }
  /**
   * Where this driver last put or found each VM, so a command does not ask every tier first. Each actor
   * has its own driver and is the only one driving its VM; a VM removed behind its back answers NOT_FOUND
   * from its tier, and the actor then ensures it again.
   */
  const placed = new Map<string, IsolationTier>();
  /** The driver holding `name`; NOT_FOUND when no tier has it. */
  async function holderOf(name: string): Promise<RuntimeDriver> {
    const known = placed.get(name);
    if (known) return drivers[known]!;
    const [first] = await holders(drivers, name);
    if (!first) throw new RuntimeError("NOT_FOUND", `VM ${name} does not exist`);
    placed.set(name, first.tier);
    return drivers[first.tier]!;
  }
  /** Removes the VM, keeping its volume, from every tier but `keep`; returns those tiers. */
  async function removeElsewhere(name: string, keep: IsolationTier | undefined): Promise<IsolationTier[]> {
    const moved: IsolationTier[] = [];
    for (const { tier } of await holders(drivers, name)) {
      if (tier === keep) continue;
      // The VM goes; its volume stays on that tier (see the file comment): only remove() deletes data.
      await drivers[tier]!.remove(name, { keepVolume: true });
      moved.push(tier);
    }
    return moved;
  }

  const tiered: RuntimeDriver = {
    name: drivers[defaultTier]?.name ?? "local",
    async probe(): Promise<Capability> {
      const probes = await Promise.all(tiersOf(drivers).map(async (tier) => ({ tier, capability: await drivers[tier]!.probe() })));
      const usable = probes.filter((p) => p.capability.available);
      return {
        available: usable.length > 0,
        version: probes.map((p) => `${p.tier}: ${p.capability.version}`).join("; "),
        problems: usable.length > 0 ? [] : probes.flatMap((p) => p.capability.problems),
      };
    },
    ping: async () => (await Promise.all(tiersOf(drivers).map((tier) => drivers[tier]!.ping()))).some(Boolean),
    async ensure(spec): Promise<EnsureResult> {
      const tier = tierFor(spec);
      const driver = driverFor(tier);
      placed.delete(spec.name);
      const moved = await removeElsewhere(spec.name, tier);
      const result = await driver.ensure(spec);
      placed.set(spec.name, tier);
      const info = withTier(result.info, tier);
      if (moved.length === 0) return { ...result, info };
      return { info, action: "recreated", mismatches: [`isolation: expected ${tier}, found ${moved.join(", ")}`, ...result.mismatches] };
    },
    attest(expected, actual): Attestation {
      const want = tierFor(expected);
      const have = actual.spec.isolation ?? defaultTier;
      if (want !== have) return { ok: false, mismatches: [`isolation: expected ${want}, found ${have}`] };
      const driver = drivers[want];
      if (!driver) return { ok: false, mismatches: [`isolation: tier ${want} does not work on this host`] };
      return driver.attest({ ...expected, isolation: undefined }, { ...actual, spec: { ...actual.spec, isolation: undefined } });
    },
    async create(spec, options) {
      const tier = tierFor(spec);
      const driver = driverFor(tier);
      placed.delete(spec.name);
      if (options?.replace) await removeElsewhere(spec.name, tier);
      else if ((await holders(drivers, spec.name)).some((h) => h.tier !== tier)) throw new RuntimeError("ALREADY_EXISTS", `VM ${spec.name} already exists on another isolation tier`);
      const info = withTier(await driver.create(spec, options), tier);
      placed.set(spec.name, tier);
      return info;
    },
    start: async (name) => (await holderOf(name)).start(name),
    async stop(name) {
      for (const { tier } of await holders(drivers, name)) await drivers[tier]!.stop(name);
    },
    async remove(name, options) {
      placed.delete(name);
      for (const tier of tiersOf(drivers)) await drivers[tier]!.remove(name, options);
    },
    exec: async (name, request, sink) => (await holderOf(name)).exec(name, request, sink),
    async inspect(name) {
      const [first] = await holders(drivers, name);
      if (first) placed.set(name, first.tier);
      else placed.delete(name);
      return first && withTier(first.info, first.tier);
    },
    async list(labels) {
      const lists = await Promise.all(tiersOf(drivers).map(async (tier) => (await drivers[tier]!.list(labels)).map((info) => withTier(info, tier))));
      return lists.flat();
    },
    async listVolumes() {
      const lists = await Promise.all(tiersOf(drivers).map((tier) => drivers[tier]!.listVolumes?.() ?? Promise.resolve([])));
      return [...new Set(lists.flat())];
    },
    async removeVolume(name) {
      for (const tier of tiersOf(drivers)) await drivers[tier]!.removeVolume?.(name);
    },
    async cleanUpIncomplete() {
      const lists = await Promise.all(tiersOf(drivers).map((tier) => drivers[tier]!.cleanUpIncomplete?.() ?? Promise.resolve([])));
      return lists.flat();
    },
    async stats(name) {
      const [first] = await holders(drivers, name);
      return first ? drivers[first.tier]!.stats?.(name) : undefined;
    },
  };
  // A terminal opens synchronously but its VM's tier is known only after asking the runtimes: keystrokes
  // and resizes wait for the real terminal, in the order they came.
  tiered.openTerminal = (name, request, output, room) => {
    const opened = holderOf(name).then((driver) => {
      if (!driver.openTerminal) throw new RuntimeError("UNAVAILABLE", `the ${driver.name} runtime has no interactive terminal; run commands with exec, or move the session to the container tier (session-sandbox isolation <session> container)`);
      return driver.openTerminal(name, request, output, room);
    });
    opened.catch(() => undefined); // reported through `result`
    return {
      write: (data) => void opened.then((terminal) => terminal.write(data), () => undefined),
      closeInput: () => void opened.then((terminal) => terminal.closeInput(), () => undefined),
      resize: (rows, cols) => opened.then((terminal) => terminal.resize(rows, cols)),
      result: opened.then((terminal) => terminal.result),
    };
  };
  return tiered;
}
