// Display helpers: times, sizes and the API's unions as short text.
import type * as Api from "../../sdk/api-types";

/** 1 → "1 CPU", 2 → "2 CPUs". */
export const cpuCount = (cpus: number): string => `${cpus} CPU${cpus === 1 ? "" : "s"}`;

export const when = (ms: number | null | undefined): string => (ms ? new Date(ms).toISOString().replace("T", " ").slice(0, 19) : "—");

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return "—";
  const mib = n / 1024 / 1024;
  return mib >= 1024 ? `${(mib / 1024).toFixed(1)} GiB` : `${mib.toFixed(1)} MiB`;
}

export type NetworkPolicy = Api.NetworkPolicy;
export type ImageChoice = Api.ImageChoice;

export const network = (p: NetworkPolicy): string => (p.mode === "allowlist" ? `allowlist: ${p.allow.join(", ") || "(empty)"}` : p.mode);
export const image = (i: ImageChoice): string =>
  i.kind === "oci" ? `OCI ${i.reference}` : i.kind === "dockerfile" ? `Dockerfile ${i.path}` : i.packages.length ? `recipe + ${i.packages.join(", ")}` : "built-in recipe";
