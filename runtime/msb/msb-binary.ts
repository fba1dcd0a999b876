// Which msb binary the driver runs, and the one release its command lines were verified against.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/** Every argument vector in runtime/msb was checked against this release (docs/runtime-msb.md). */
export const MSB_PINNED_VERSION = "0.6.18";

/** The npm optional dependency of `microsandbox` that bundles msb and libkrunfw for this host. */
const PLATFORM_PACKAGES: Record<string, string> = {
  "linux-x64": "@superradcompany/microsandbox-linux-x64-gnu",
  "linux-arm64": "@superradcompany/microsandbox-linux-arm64-gnu",
  "darwin-arm64": "@superradcompany/microsandbox-darwin-arm64",
};

export type MsbBinary = { path: string; source: "option" | "MSB_PATH" | "npm package" | "PATH" };

/** The platform package's own `bin/msb` (libkrunfw sits next to it in `lib/`), not the node shim. */
function fromPackage(): string | undefined {
  const name = PLATFORM_PACKAGES[`${process.platform}-${process.arch}`];
  if (!name) return undefined;
  try {
    const manifest = createRequire(import.meta.url).resolve(`${name}/package.json`);
    const path = join(dirname(manifest), "bin", "msb");
    return existsSync(path) ? path : undefined;
  } catch {
    return undefined;
  }
}

/** Order: explicit option, then MSB_PATH, then the pinned npm package, then `msb` on PATH. */
export function resolveMsbBinary(options: { msbPath?: string }, hostEnv: Record<string, string | undefined>): MsbBinary | undefined {
  if (options.msbPath) return { path: options.msbPath, source: "option" };
  if (hostEnv.MSB_PATH) return { path: hostEnv.MSB_PATH, source: "MSB_PATH" };
  const packaged = fromPackage();
  if (packaged) return { path: packaged, source: "npm package" };
  const onPath = Bun.which("msb", { PATH: hostEnv.PATH ?? "" });
  return onPath ? { path: onPath, source: "PATH" } : undefined;
}

/** `msb --version` prints `msb X.Y.Z`. */
export function parseVersion(stdout: string): string | undefined {
  return /^msb (\S+)/m.exec(stdout.trim())?.[1];
}
