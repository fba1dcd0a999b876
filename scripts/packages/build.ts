// `bun run packages [--out DIR] [--pack DEST]`: builds the npm packages this repository publishes.
//   @session-sandbox/sdk       packages/sdk: the SDK as one ES module bundle for Node ≥ 18 and Bun, with
//                              .d.ts generated from the manager's OpenAPI document (no server code or types);
//   @session-sandbox/opencode  packages/opencode: the OpenCode plugin and its shell shim, depending on the SDK;
//   session-sandbox            the repository root: the CLI and the manager (`session-sandbox serve`), run by Bun.
// By default the builds land in packages/*/dist; `--out` builds copies of packages/* under DIR instead
// (the tests do, leaving the tree alone). `--pack` also runs `npm pack` for all three into DEST.
import { chmodSync, cpSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import type { BunPlugin } from "bun";
import { emitSdkDeclarations } from "./sdk-declarations";

const ROOT = resolve(import.meta.dir, "../..");
export const PACKAGE_DIRS = { sdk: "sdk", opencode: "opencode" } as const;

async function bundle(config: Parameters<typeof Bun.build>[0]): Promise<void> {
  const result = await Bun.build(config);
  if (!result.success) throw new Error(`bundling ${config.entrypoints.join(", ")} failed:\n${result.logs.join("\n")}`);
}

/** A package's checked-in files (package.json, README.md) under `outDir`, with a fresh, empty dist/. */
function preparePackage(name: keyof typeof PACKAGE_DIRS, outRoot: string): string {
  const source = join(ROOT, "packages", PACKAGE_DIRS[name]);
  const target = join(outRoot, PACKAGE_DIRS[name]);
  if (resolve(source) !== resolve(target)) cpSync(source, target, { recursive: true, filter: (path) => !path.includes("/dist") && !path.includes("/node_modules") });
  rmSync(join(target, "dist"), { recursive: true, force: true });
  mkdirSync(join(target, "dist"), { recursive: true });
  return target;
}

/** The SDK: index (the client, errors, streams, arbiter, types) and connection (Node's fs: the resolver). */
export async function buildSdk(outRoot: string): Promise<string> {
  const dir = preparePackage("sdk", outRoot);
  const entries = ["index.ts", "connection.ts"];
  await bundle({
    entrypoints: entries.map((entry) => join(ROOT, "sdk", entry)),
    outdir: join(dir, "dist"),
    target: "node",
    format: "esm",
    splitting: true, // one copy of the shared modules (the error classes must be one class for instanceof)
  });
  emitSdkDeclarations(join(ROOT, "sdk"), entries, join(dir, "dist"));
  return dir;
}

/** The plugin's imports of ../sdk/* become imports of the SDK package, which it depends on. */
const sdkAsPackage: BunPlugin = {
  name: "sdk as @session-sandbox/sdk",
  setup(build) {
    build.onResolve({ filter: /\/sdk\/(index|connection)$/ }, (args) => ({
      path: args.path.endsWith("/connection") ? "@session-sandbox/sdk/connection" : "@session-sandbox/sdk",
      external: true,
    }));
  },
};

/** The plugin (dist/index.js, whose only export is the plugin), the shim, its C helper's sources, shim-main.js. */
export async function buildOpencodePlugin(outRoot: string): Promise<string> {
  const dir = preparePackage("opencode", outRoot);
  const dist = join(dir, "dist");
  await bundle({
    entrypoints: [join(ROOT, "plugin/index.ts"), join(ROOT, "plugin/shim-main.ts")],
    outdir: dist,
    target: "bun", // OpenCode loads plugins with its own Bun; the shim's `bun` variant runs shim-main.js
    format: "esm",
    plugins: [sdkAsPackage],
  });
  cpSync(join(ROOT, "plugin/shim"), join(dist, "shim"));
  chmodSync(join(dist, "shim"), 0o755);
  const helperDir = join(dist, "shim-helper");
  mkdirSync(helperDir);
  for (const file of readdirSync(join(ROOT, "plugin/shim-helper"))) {
    if (/\.(c|h|sh)$/.test(file)) cpSync(join(ROOT, "plugin/shim-helper", file), join(helperDir, file));
  }
  chmodSync(join(helperDir, "build.sh"), 0o755);
  return dir;
}

async function npmPack(dir: string, dest: string): Promise<string> {
  const proc = Bun.spawn(["npm", "pack", "--json", "--pack-destination", dest], { cwd: dir, stdout: "pipe", stderr: "pipe", env: { ...process.env, npm_config_update_notifier: "false" } });
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  if (code !== 0) throw new Error(`npm pack in ${dir} failed (${code}): ${stderr}`);
  const [packed] = JSON.parse(stdout) as [{ filename: string }];
  return join(dest, packed.filename);
}

export type BuiltPackages = { sdk: string; opencode: string; cli: string };

/** Builds the SDK and the plugin under `outRoot` and packs all three into `dest`; answers the tarballs. */
export async function buildAndPack(outRoot: string, dest: string): Promise<BuiltPackages> {
  mkdirSync(dest, { recursive: true });
  const sdk = await buildSdk(outRoot);
  const opencode = await buildOpencodePlugin(outRoot);
  return { sdk: await npmPack(sdk, dest), opencode: await npmPack(opencode, dest), cli: await npmPack(ROOT, dest) };
}

if (import.meta.main) {
  const valueOf = (flag: string) => {
    const at = process.argv.indexOf(flag);
    return at > 0 ? process.argv[at + 1] : undefined;
  };
  const outRoot = resolve(valueOf("--out") ?? join(ROOT, "packages"));
  const dest = valueOf("--pack");
  if (dest) {
    const tarballs = await buildAndPack(outRoot, resolve(dest));
    for (const tarball of Object.values(tarballs)) process.stdout.write(`${tarball}\n`);
  } else {
    process.stdout.write(`${await buildSdk(outRoot)}\n${await buildOpencodePlugin(outRoot)}\n`);
  }
}
