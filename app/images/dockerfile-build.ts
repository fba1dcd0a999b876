// Builds a guest image from a Dockerfile inside sandbox VMs, one per stage in turn: the stage's base (an image
// pulled like any OCI image, or an earlier stage's result) boots as a VM whose every write stays in its own
// memory (VmSpec.scratchWrites, the gVisor tier), with the build context mounted read-only; each RUN and COPY
// is a command in that VM, never on the host. A stage's result leaves the VM as one tar stream (the guest's tar is the static busybox we mount, so an image
// without tar builds too), bounded by the image size limit, and is unpacked like a pulled image: umoci
// extracts it as a layer, and the tree is sanitized and checked as hostile input (oci-pull.ts).
//
// What RUN writes under the top-level directory that holds the context's mount point (/work for a
// repository at /work/repo; /tmp, /home and the kernel's directories never count) is not kept: the export
// leaves that directory out rather than copy the repository into the image.
import { chmodSync, copyFileSync, createWriteStream, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import type { RuntimeDriver } from "../../runtime/driver";
import type { BuildNetwork } from "./build-egress";
import { processAlive, processStartTime } from "../../runtime/proc-stat";
import type { BuildPlan, BuildStage } from "./dockerfile";
import { ImagePullError, publishUnpacked } from "./oci-pull";
import { contextFilter, WHOLE_CONTEXT, type ContextFilter } from "./build-context";
import { ImageBuildError } from "./build-error";
import { copyScript, shellQuote, withSymlinksResolved } from "./dockerfile-copy";
import { lineSink } from "./build-progress";
import { resolveUser } from "./build-user";
import { runWithLines, type Line } from "./run-with-lines";
import { ImageSizeExceeded, runWithinSize } from "./size-watch";

/** The static busybox (Debian's busybox-static) the build VM's export and COPY use. */
export const BUILD_BUSYBOX = "/bin/busybox";
/** Top-level guest directories that are the VM's own mounts, never the image's. */
const NOT_EXPORTED = ["proc", "sys", "dev", "tmp", "run", "home"];
/** Where each build's tools directory is made: `<prefix><pid>-<start time>-<random>`. */
const TOOLS_PREFIX = "/tmp/ss-build-tools-";

export type DockerfileBuild = {
  driver: RuntimeDriver;
  plan: BuildPlan;
  /** Each image of `plan.images`, pulled and unpacked (a rootfs directory). */
  bases: Record<string, string>;
  /** The build context (the repository): mounted read-only at its own path. */
  contextDir: string;
  /** The context's .dockerignore, read with the Dockerfile: what COPY leaves out (absent: nothing). */
  dockerignore?: string;
  /** Where the image is published (one rename) once complete. */
  rootfs: string;
  /** The build VM's name: unique per build. */
  vmName: string;
  labels: Record<string, string>;
  cpus: number;
  memoryMib: number;
  limitBytes: number;
  /** Each step's limit; a step past it fails the build. */
  stepTimeoutMs: number;
  /**
   * How a build VM booted from this rootfs reaches out (the session's policy, through a proxy of its own;
   * the CA bundle is the rootfs's own store and the manager's); absent: no network.
   */
  network?: (baseRootfs: string) => Promise<BuildNetwork>;
  onLine: Line;
};

const quote = shellQuote;

/** The export: every top-level directory but the VM's own and the one holding the context, as a tar on stdout. */
function exportScript(contextDir: string, busybox: string): string {
  const skipped = [...NOT_EXPORTED, contextDir.split("/").filter(Boolean)[0]!];
  const bb = quote(busybox);
  return `cd / && set -- $(${bb} ls -A / | ${bb} grep -vxE ${quote(skipped.join("|"))}) && exec ${bb} tar -cf - "$@"`;
}

/** Hard links where the file system allows (nothing in a build writes a mounted image), else a copy. */
async function linkTree(from: string, to: string): Promise<void> {
  for (const flags of ["-al", "-a"]) {
    rmSync(to, { recursive: true, force: true });
    if ((await runWithLines(["cp", flags, "--", from, to], undefined)).code === 0) return;
  }
  throw new ImageBuildError(`the image at ${from} could not be made available to the build`);
}

type StageRun = { build: DockerfileBuild; tools: string; busybox: string; work: string; filter: ContextFilter; stepsBefore: number; totalSteps: number };

/**
 * Builds one stage in its own VM, booted from `base`, with the context, the tools and `from` (the images of
 * its COPY --from sources) mounted read-only, and unpacks its result at `target`.
 */
async function buildStage(run: StageRun, stage: BuildStage, base: string, from: Map<string, string>, out: { target: string; unpacked: string }, label: string): Promise<void> {
  const { build, tools, busybox, work, filter } = run;
  const { driver, onLine } = build;
  onLine(`build: ${label}booting the build VM (its writes stay in its memory)`);
  const network = await build.network?.(base);
  await driver.create({
    name: build.vmName,
    image: base,
    cpus: build.cpus,
    memoryMib: build.memoryMib,
    mounts: [{ hostPath: build.contextDir, readOnly: true }, { hostPath: tools, readOnly: true }],
    // A build's /tmp (pip's wheels, go's work dirs) is memory like its other writes: half the VM's.
    tmpSizeMib: Math.floor(build.memoryMib / 2),
    volume: { name: build.vmName },
    labels: build.labels,
    network: network?.policy ?? { mode: "none" },
    ...(network ? { tierPart: network.tierPart } : {}),
    ...(network?.trustDir === undefined ? {} : { trustDir: network.trustDir }),
    scratchWrites: true,
  });
  try {
    for (const [index, step] of stage.steps.entries()) {
      const number = run.stepsBefore + index + 1;
      const prefix = `step ${number}/${run.totalSteps}`;
      onLine(`${prefix}: line ${step.source.line}: ${step.source.text.slice(0, 200)}`);
      const copyFrom = step.kind === "copy" && step.from ? from.get("stage" in step.from ? `stage:${step.from.stage}` : `image:${step.from.image}`) : undefined;
      const script = (other: Exclude<typeof step, { kind: "run" }>) =>
        other.kind === "workdir"
          ? `${quote(busybox)} mkdir -p ${quote(other.path)}`
          : copyFrom
            ? copyScript(withSymlinksResolved(other, copyFrom), number, { contextDir: copyFrom, filter: WHOLE_CONTEXT, toolsDir: tools, busybox })
            : copyScript(other, number, { contextDir: build.contextDir, filter, toolsDir: tools, busybox });
      const argv = step.kind === "run" ? step.argv : [busybox, "sh", "-c", script(step)];
      const sink = lineSink(`${prefix} |`, onLine);
      // A RUN after USER runs as that user, with its HOME (unless ENV set one), as in Docker.
      const as = step.kind === "run" && step.user !== undefined ? await resolveUser(build, busybox, step.user, step.source) : undefined;
      const env = step.kind === "run" ? { ...network?.env, ...(as ? { HOME: as.home } : {}), ...step.env } : {};
      const result = await driver.exec(build.vmName, { argv, cwd: step.kind === "workdir" ? "/" : step.cwd, env, timeoutMs: build.stepTimeoutMs, ...(as ? { user: as.user } : {}) }, sink);
      if (result.exitCode !== 0) {
        const why = result.timedOut ? `did not finish within ${build.stepTimeoutMs / 1000} s` : `exited with ${result.exitCode}`;
        throw new ImageBuildError(`Dockerfile line ${step.source.line} (${step.source.text.slice(0, 80)}) ${why}${sink.tail() ? `:\n${sink.tail()}` : ""}`);
      }
    }
    onLine(`build: ${label}exporting the image from the build VM`);
    const layer = join(work, "layer.tar");
    await exportLayer(build, busybox, layer);
    onLine(`build: ${label}unpacking it as an image layer (umoci)`);
    const layout = join(work, "layout");
    rmSync(layout, { recursive: true, force: true });
    for (const argv of [["umoci", "init", "--layout", layout], ["umoci", "new", "--image", `${layout}:build`], ["umoci", "raw", "add-layer", "--image", `${layout}:build`, layer]]) {
      const step = await runWithLines(argv, undefined);
      if (step.code !== 0) throw new ImagePullError(`${argv.slice(0, 3).join(" ")} failed: ${step.stderr.trim().split("\n").at(-1)}`);
    }
    rmSync(layer, { force: true });
    const { target, unpacked } = out;
    const unpack = await runWithinSize(["umoci", "raw", "unpack", "--image", `${layout}:build`, unpacked], undefined, { dir: unpacked, fsPath: dirname(unpacked), limitBytes: build.limitBytes });
    if (unpack.code !== 0) throw new ImagePullError(`umoci could not unpack the built image: ${unpack.stderr.trim().split("\n").at(-1)}`);
    rmSync(layout, { recursive: true, force: true });
    await publishUnpacked(unpacked, target);
  } finally {
    await driver.remove(build.vmName).catch(() => {});
  }
}

/**
 * Runs the build, one VM per stage in turn; on success the image is at `rootfs`. An earlier stage's result
 * (and a registry image a COPY --from names) sits in the tools directory, which later stages mount: under
 * /tmp, which the export leaves out. A failure leaves nothing behind, VMs included.
 */
export async function buildFromDockerfile(build: DockerfileBuild): Promise<void> {
  const { plan, onLine } = build;
  // Under /tmp whatever TMPDIR says: the guest sees the mount at this same path, and /tmp is the VM's own.
  // The maker's pid and start time in the name let a later start remove one a kill -9 left (removeStaleBuildTools).
  const tools = mkdtempSync(`${TOOLS_PREFIX}${process.pid}-${processStartTime(process.pid)}-`);
  const work = `${build.rootfs}.partial`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true, mode: 0o700 });
  try {
    chmodSync(tools, 0o755);
    const busybox = join(tools, "busybox");
    copyFileSync(BUILD_BUSYBOX, busybox);
    chmodSync(busybox, 0o755);
    for (const where of plan.ignored) onLine(`build: line ${where.line}: ${where.text.split(" ")[0]} has no effect on a VM image (ignored)`);
    const run: StageRun = { build, tools, busybox, work, filter: contextFilter(build.dockerignore), stepsBefore: 0, totalSteps: plan.stages.reduce((sum, stage) => sum + stage.steps.length, 0) };
    const built: string[] = [];
    for (const [index, stage] of plan.stages.entries()) {
      const last = index === plan.stages.length - 1;
      const base = "image" in stage.base ? build.bases[stage.base.image]! : built[stage.base.stage]!;
      const named = (stageIndex: number) => plan.stages[stageIndex]!.name ?? String(stageIndex);
      const label = plan.stages.length === 1 ? "" : `stage ${index + 1}/${plan.stages.length} (${stage.name ?? "unnamed"}, from ${"image" in stage.base ? stage.base.image : named(stage.base.stage)}): `;
      if (!last && stage.steps.length === 0) {
        built.push(base); // nothing to run: its image is its base
        continue;
      }
      const from = new Map<string, string>();
      for (const step of stage.steps) {
        if (step.kind !== "copy" || !step.from) continue;
        if ("stage" in step.from) from.set(`stage:${step.from.stage}`, built[step.from.stage]!);
        else if (!from.has(`image:${step.from.image}`)) {
          // A registry image's cached tree lies outside /tmp: linked into the tools directory, so the export leaves it out.
          const linked = join(tools, `image-${from.size}`);
          await linkTree(build.bases[step.from.image]!, linked);
          from.set(`image:${step.from.image}`, linked);
        }
      }
      // The image's unpack happens in the partial directory beside it (startup recovery removes one a crash left).
      const out = last ? { target: build.rootfs, unpacked: join(work, "rootfs") } : { target: join(tools, `stage-${index}`), unpacked: join(tools, `stage-${index}.unpacked`) };
      await buildStage(run, stage, base, from, out, label);
      built.push(join(tools, `stage-${index}`));
      run.stepsBefore += stage.steps.length;
    }
    onLine(`build: done (${readdirSync(build.rootfs).length} top-level entries)`);
  } finally {
    rmSync(work, { recursive: true, force: true });
    rmSync(tools, { recursive: true, force: true });
  }
}

/** The tools directories of builds whose manager is gone (a kill -9 skips their clean-up); returns what went. */
export function removeStaleBuildTools(): string[] {
  const removed: string[] = [];
  for (const entry of readdirSync("/tmp").filter((name) => `/tmp/${name}`.startsWith(TOOLS_PREFIX))) {
    const maker = /^ss-build-tools-(\d+)-(\d+)-/.exec(entry);
    if (maker && processAlive(Number(maker[1]), maker[2]!)) continue;
    rmSync(join("/tmp", entry), { recursive: true, force: true });
    removed.push(join("/tmp", entry));
  }
  return removed;
}

/** Streams the guest's tar to `layer`, cut (ImageSizeExceeded) past the size limit. */
async function exportLayer(build: DockerfileBuild, busybox: string, layer: string): Promise<void> {
  const file = createWriteStream(layer, { mode: 0o600 });
  const cut = new AbortController();
  let bytes = 0;
  let stderr = "";
  const closeFile = () => new Promise<void>((resolve, reject) => file.end((error?: Error | null) => (error ? reject(error) : resolve())));
  const result = await build.driver.exec(
    build.vmName,
    { argv: [busybox, "sh", "-c", exportScript(build.contextDir, busybox)], cwd: "/", timeoutMs: build.stepTimeoutMs, signal: cut.signal },
    {
      stdout(chunk) {
        bytes += chunk.length;
        if (bytes > build.limitBytes) cut.abort();
        else file.write(chunk);
      },
      stderr(chunk) {
        stderr = (stderr + new TextDecoder().decode(chunk)).slice(-4096);
      },
      // The guest's tar waits while the file catches up: never more than one chunk held here.
      room: () => (file.writableNeedDrain ? new Promise<void>((resolve) => file.once("drain", () => resolve())) : undefined),
    },
  ).finally(closeFile);
  if (bytes > build.limitBytes) throw new ImageSizeExceeded(build.limitBytes, bytes);
  if (result.exitCode !== 0) throw new ImageBuildError(`exporting the built image failed (exit ${result.exitCode}): ${stderr.trim() || "no message"}`);
}
