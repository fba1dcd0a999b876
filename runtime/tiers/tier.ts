// An isolation tier as the manager sees it: which driver runs it, what its VMs boot, what its network can
// enforce, and how one of its VMs gets out, what it trusts and how secrets reach it. The manager asks the
// tier; it never names a runtime. The three tiers are built in runtime/tiers/index.ts.
import type { NetworkPolicy } from "../../egress/network-policy";
import type { SecretRule } from "../../egress/index";
import type { TierPart } from "../driver";
import type { IsolationTier } from "../isolation";
import type { RuntimeName } from "../select";

/** What a tier's VMs boot: root filesystem directories (the embedded tiers) or OCI image references. */
export type ImageFamily = "rootfs" | "oci";

/** Why an `oci` family manager refuses an image recipe with extra packages, and what to do instead. */
export const OCI_FAMILY_BUILDS_NO_RECIPES =
  "extra packages need the local runtime: msb boots OCI images; build an image with those packages, push it to a registry and give its reference";

/** The session's credentials for its guest: env with placeholders, and the rules that swap the values in. */
export type Forwarding = { env: Record<string, string>; proxyRules: SecretRule[] };

export type WayOutRequest = {
  network: NetworkPolicy;
  forwarding: Forwarding;
  /** The host path of this VM's egress proxy socket, where a tier reaches out through the host proxy. */
  egressSocket: () => string;
  /** The host directory of the CA files this VM trusts, where a tier mounts them. */
  trustDir: () => string;
};

/** The tier's share of a VM: its spec part, its trust directory, the command env they need, and the rules the host proxy applies. */
export type WayOut = { tierPart: TierPart; trustDir?: string; env: Record<string, string>; proxyRules: SecretRule[] };

export type Tier = {
  name: IsolationTier;
  /** The driver that runs this tier's VMs. */
  runtime: RuntimeName;
  imageFamily: ImageFamily;
  /** Whether its VMs need the host's KVM. */
  needsKvm: boolean;
  /**
   * Why the host cannot see inside this tier's VMs (no cgroups of theirs to read usage from, no home
   * volume of the host's to enforce the disk quota on), and what to use instead; absent: it can.
   */
  unmeasured?: string;
  /**
   * Why this tier cannot give a session a Docker Engine (the `docker` setting), with the fix; absent: it can
   * (docs/docker.md).
   */
  dockerRefusal?: string;
  /** Allow-list entries this tier's network cannot enforce, each with why (empty: it enforces them all). */
  networkProblems(allow: string[]): string[];
  wayOut(request: WayOutRequest): WayOut;
};
