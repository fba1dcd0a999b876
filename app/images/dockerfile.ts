// Reads a Dockerfile into the steps an image build runs in a sandbox VM (dockerfile-build.ts). The syntax
// (line continuations, the escape directive, comments, quoting in ENV and ARG) is dockerfile-ast's, the
// parser of the Docker language server; which instructions are accepted, and what each means here, is
// ours. Anything this builder cannot do as Docker would is refused up front with the line and the fix,
// never built differently: no build-time mounts, no ADD of a URL. A multi-stage Dockerfile is one stage per
// FROM; only the stages the last one needs (its base, what it copies --from) are built.
import { DockerfileParser, type Instruction } from "dockerfile-ast";
import { ImageInvalidError } from "../errors";

/** Where the Dockerfile is looked for when a choice names no path (the opencode-sandbox launcher's place). */
export const DEFAULT_DOCKERFILE = ".opencode-sandbox/Dockerfile";
const MAX_DOCKERFILE_BYTES = 256 * 1024;
const MAX_STEPS = 200;

/** What a step came from, for progress and errors: `line 7: RUN make`. */
export type StepSource = { line: number; text: string };

export type BuildStep =
  /** `user`: USER's `name[:group]` or ids as written, resolved in the build VM (absent: root). */
  | { kind: "run"; argv: string[]; env: Record<string, string>; cwd: string; user?: string; source: StepSource }
  /**
   * `extract`: ADD's, a local tar archive (plain, gzip, bzip2, xz) is unpacked into dest instead of copied.
   * `from`: COPY --from, the sources are paths of an earlier stage's image (its index) or of a registry
   * image, not of the context.
   */
  | { kind: "copy"; sources: string[]; dest: string; chown?: string; chmod?: string; extract?: true; from?: CopyFrom; cwd: string; source: StepSource }
  | { kind: "workdir"; path: string; source: StepSource };

export type CopyFrom = { stage: number } | { image: string };

/** One FROM and its steps: it starts from a registry image (its reference) or an earlier stage (its index). */
export type BuildStage = { name?: string; base: { image: string } | { stage: number }; steps: BuildStep[]; source: StepSource };

export type BuildPlan = {
  /**
   * The stages to build, in order; the last is the image. A stage nothing needs is dropped, and the indices
   * in `base` and `from` count in this list.
   */
  stages: BuildStage[];
  /** The registry images the build starts from or copies from (build arguments substituted), each once. */
  images: string[];
  /** The context paths COPY reads (relative, no `..`), for the content digest. */
  contextPaths: string[];
  /** Instructions that are accepted and have no effect here (CMD, EXPOSE…), for the build log. */
  ignored: StepSource[];
};

/** Accepted and without effect: they describe how a container is started, and a VM runs the agent's commands. */
const IGNORED = new Set(["CMD", "ENTRYPOINT", "EXPOSE", "LABEL", "MAINTAINER", "VOLUME", "STOPSIGNAL", "HEALTHCHECK", "ONBUILD"]);
/** A source ADD would fetch rather than read from the context. */
const REMOTE_SOURCE = /^([a-z][a-z0-9+.-]*:\/\/|git@)/i;

function refuse(where: StepSource, reason: string): never {
  throw new ImageInvalidError(`Dockerfile line ${where.line} (${where.text.slice(0, 80)}): ${reason}`);
}

/** $NAME, ${NAME}, ${NAME:-default} and ${NAME:+alternative}, as Docker substitutes them; `\$` stays a `$`. */
export function substitute(text: string, vars: Record<string, string>): string {
  return text.replace(/\\\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([-+])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (match, braced, op, word, bare) => {
    if (match === "\\$") return "$";
    const name = (braced ?? bare) as string;
    const value = vars[name];
    if (op === "-") return value ? value : word;
    if (op === "+") return value ? word : "";
    return value ?? "";
  });
}

/** The exec form `["a", "b"]` when the text is a JSON array of strings (Docker's rule), else undefined. */
function execForm(text: string): string[] | undefined {
  if (!text.trim().startsWith("[")) return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    return Array.isArray(parsed) && parsed.length > 0 && parsed.every((item) => typeof item === "string") ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** A COPY source: relative to the context, never above it. */
function contextPath(path: string, where: StepSource): string {
  const parts = path.split("/").filter((part) => part !== "" && part !== ".");
  if (parts.includes("..")) refuse(where, `COPY source ${JSON.stringify(path)} reaches above the build context; name files inside the repository`);
  return parts.join("/") || ".";
}

/** Whether a path (or one part of it) holds a wildcard COPY expands. */
export const hasWildcard = (path: string) => /[*?[]/.test(path);

/** What a COPY source may read: the path up to its first wildcard (`src/*.ts` reads from `src`). */
function globFreePrefix(path: string): string {
  const parts = path.split("/");
  const firstGlob = parts.findIndex(hasWildcard);
  return (firstGlob < 0 ? parts : parts.slice(0, firstGlob)).join("/") || ".";
}

function absoluteIn(cwd: string, path: string): string {
  if (path.startsWith("/")) return path;
  return `${cwd.replace(/\/$/, "")}/${path}`;
}

function flagsOf(instruction: Instruction): Map<string, string> {
  const flags = new Map<string, string>();
  const withFlags = instruction as Instruction & { getFlags?: () => { getName(): string; getValue(): string | null }[] };
  for (const flag of withFlags.getFlags?.() ?? []) flags.set(flag.getName(), flag.getValue() ?? "");
  return flags;
}

/** What a stage carries into a stage built FROM it, as Docker's image config does. */
type StageState = { env: Record<string, string>; cwd: string; shell: string[]; user: string | undefined };

const FRESH_STATE = (): StageState => ({ env: {}, cwd: "/", shell: ["/bin/sh", "-c"], user: undefined });

type ParsedStage = BuildStage & { contextPaths: Set<string>; state: StageState };

/** A COPY --from source: a path of the other image, made absolute; never `..` (it is listed on the host). */
function imagePath(path: string, where: StepSource): string {
  const parts = path.split("/").filter((part) => part !== "" && part !== ".");
  if (parts.includes("..")) refuse(where, `COPY --from source ${JSON.stringify(path)} has a ".." in it; name the path inside that image`);
  return parts.join("/") || ".";
}

/** The stages the last one needs, renumbered in build order; the images they name. */
function neededStages(parsed: ParsedStage[]): { stages: BuildStage[]; images: string[]; contextPaths: string[] } {
  const needed = new Set<number>();
  const visit = (index: number) => {
    if (needed.has(index)) return;
    needed.add(index);
    const stage = parsed[index]!;
    if ("stage" in stage.base) visit(stage.base.stage);
    for (const step of stage.steps) if (step.kind === "copy" && step.from && "stage" in step.from) visit(step.from.stage);
  };
  visit(parsed.length - 1);
  const order = [...needed].sort((a, b) => a - b);
  const renumber = (index: number) => order.indexOf(index);
  const images = new Set<string>();
  const contextPaths = new Set<string>();
  const stages = order.map((index): BuildStage => {
    const { contextPaths: paths, state: _state, ...stage } = parsed[index]!;
    for (const path of paths) contextPaths.add(path);
    if ("image" in stage.base) images.add(stage.base.image);
    const steps = stage.steps.map((step) => {
      if (step.kind !== "copy" || !step.from) return step;
      if ("image" in step.from) images.add(step.from.image);
      return "stage" in step.from ? { ...step, from: { stage: renumber(step.from.stage) } } : step;
    });
    return { ...stage, base: "stage" in stage.base ? { stage: renumber(stage.base.stage) } : stage.base, steps };
  });
  return { stages, images: [...images], contextPaths: [...contextPaths].sort() };
}

/** Parses and checks a Dockerfile; throws ImageInvalidError (a 400) naming the line and the fix. */
export function planDockerfile(text: string): BuildPlan {
  if (Buffer.byteLength(text) > MAX_DOCKERFILE_BYTES) throw new ImageInvalidError(`the Dockerfile is larger than ${MAX_DOCKERFILE_BYTES / 1024} KiB`);
  const instructions = DockerfileParser.parse(text).getInstructions();
  const args: Record<string, string> = {};
  const parsed: ParsedStage[] = [];
  const ignored: StepSource[] = [];
  let steps = 0;
  /** An earlier stage by name (case-insensitive, as Docker) or index. */
  const stageNamed = (name: string): number | undefined => {
    const lower = name.toLowerCase();
    const byName = parsed.findIndex((stage) => stage.name === lower);
    if (byName >= 0) return byName;
    return /^\d+$/.test(name) && Number(name) < parsed.length ? Number(name) : undefined;
  };
  for (const instruction of instructions) {
    const keyword = instruction.getKeyword().toUpperCase();
    const content = instruction.getArgumentsContent() ?? "";
    const where: StepSource = { line: instruction.getRange().start.line + 1, text: `${keyword} ${content}`.trim() };
    const current = parsed.at(-1);
    const state = current?.state ?? FRESH_STATE();
    const vars = { ...args, ...state.env };
    if (IGNORED.has(keyword)) {
      ignored.push(where);
      continue;
    }
    if (keyword === "ARG") {
      for (const property of (instruction as Instruction & { getProperties(): { getName(): string; getValue(): string | null }[] }).getProperties()) {
        args[property.getName()] = substitute(property.getValue() ?? "", vars);
      }
      continue;
    }
    if (keyword === "FROM") {
      const words = instruction.getArguments().map((arg) => arg.getValue());
      const image = substitute(words[0] ?? "", args);
      if (image === "") refuse(where, "FROM names no image");
      if (words.length !== 1 && !(words.length === 3 && words[1]!.toLowerCase() === "as")) refuse(where, "FROM takes an image and optionally AS <name>: FROM node:22 AS build");
      if (image === "scratch") refuse(where, "FROM scratch has no shell for RUN and no /bin/sh for the session's commands: start from an image with a shell (debian, alpine, busybox)");
      if (flagsOf(instruction).size > 0) refuse(where, "FROM flags (--platform) are not supported: the image is this host's platform");
      const name = words[2]?.toLowerCase();
      if (name !== undefined && stageNamed(name) !== undefined && !/^\d+$/.test(name)) refuse(where, `a stage named ${name} comes earlier: stage names must differ`);
      // FROM names an earlier stage by its name only (a number is an image's name here, as in Docker).
      const earlier = /^\d+$/.test(image) ? undefined : stageNamed(image);
      const inherited = earlier === undefined ? FRESH_STATE() : structuredClone(parsed[earlier]!.state);
      parsed.push({
        ...(name === undefined ? {} : { name }),
        base: earlier === undefined ? { image } : { stage: earlier },
        steps: [],
        source: where,
        contextPaths: new Set(),
        state: inherited,
      });
      continue;
    }
    if (!current) refuse(where, `${keyword} before FROM: a Dockerfile starts with FROM (ARG may come first)`);
    const push = (step: BuildStep) => {
      current.steps.push(step);
      if (++steps > MAX_STEPS) refuse(where, `more than ${MAX_STEPS} steps`);
    };
    if (keyword === "ENV") {
      for (const property of (instruction as Instruction & { getProperties(): { getName(): string; getValue(): string | null }[] }).getProperties()) {
        state.env[property.getName()] = substitute(property.getValue() ?? "", vars);
      }
    } else if (keyword === "WORKDIR") {
      state.cwd = absoluteIn(state.cwd, substitute(content.trim(), vars));
      push({ kind: "workdir", path: state.cwd, source: where });
    } else if (keyword === "USER") {
      const named = substitute(content.trim(), vars);
      if (!/^[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)?$/.test(named)) refuse(where, "USER takes a user and optionally a group, by name or id: USER node, USER 1000:1000");
      // The RUN steps after it run as that user (COPY and WORKDIR stay root's, as in Docker).
      state.user = named === "root" || named === "0" || named === "0:0" || named === "root:root" ? undefined : named;
    } else if (keyword === "SHELL") {
      const form = execForm(content);
      if (!form) refuse(where, 'SHELL takes the exec form, e.g. SHELL ["/bin/bash", "-c"]');
      state.shell = form;
    } else if (keyword === "RUN") {
      if (flagsOf(instruction).size > 0) refuse(where, "RUN flags (--mount, --network, --security) are not supported: the build runs each RUN in the build VM as it is");
      // Build arguments reach RUN as environment variables, as in Docker; ENV wins over ARG.
      push({ kind: "run", argv: execForm(content) ?? [...state.shell, content], env: { ...args, ...state.env }, cwd: state.cwd, ...(state.user === undefined ? {} : { user: state.user }), source: where });
    } else if (keyword === "COPY" || keyword === "ADD") {
      const flags = flagsOf(instruction);
      const allowed = keyword === "COPY" ? ["chown", "chmod", "from"] : ["chown", "chmod"];
      const unknown = [...flags.keys()].filter((name) => !allowed.includes(name));
      if (unknown.length > 0) refuse(where, `${keyword} --${unknown[0]} is not supported: ${keyword} takes files of the repository, with --chown and --chmod${keyword === "COPY" ? ", or of another stage or image with --from" : ""}`);
      const paths = (execForm(content) ?? instruction.getArguments().filter((arg) => !arg.getValue().startsWith("--")).map((arg) => arg.getValue())).map((path) => substitute(path, vars));
      if (paths.length < 2) refuse(where, `${keyword} needs a source and a destination`);
      const remote = paths.slice(0, -1).find((path) => REMOTE_SOURCE.test(path));
      if (remote) refuse(where, `ADD of a URL (${remote.slice(0, 80)}) is not supported: fetch it in a RUN step (curl or wget; RUN reaches what the session's network policy allows)`);
      const fromFlag = flags.get("from");
      let from: CopyFrom | undefined;
      if (fromFlag !== undefined) {
        const named = substitute(fromFlag, vars);
        if (named === "") refuse(where, "COPY --from names no stage or image");
        const stage = stageNamed(named);
        if (stage === parsed.length - 1) refuse(where, `COPY --from=${named} names the stage it is in: copy from an earlier stage`);
        from = stage !== undefined ? { stage } : { image: named };
      }
      const sources = paths.slice(0, -1).map((path) => (from ? imagePath(path, where) : contextPath(path, where)));
      if (!from) for (const path of sources) current.contextPaths.add(globFreePrefix(path));
      const extract = keyword === "ADD" ? { extract: true as const } : {};
      push({ kind: "copy", sources, dest: absoluteIn(state.cwd, paths.at(-1)!), chown: flags.get("chown"), chmod: flags.get("chmod"), ...extract, ...(from ? { from } : {}), cwd: state.cwd, source: where });
    } else {
      refuse(where, `unknown instruction ${keyword}`);
    }
  }
  if (parsed.length === 0) throw new ImageInvalidError("the Dockerfile has no FROM: start it with FROM <image>, e.g. FROM debian:bookworm-slim");
  return { ...neededStages(parsed), ignored };
}
