// Reads a Dockerfile into the steps an image build runs in a sandbox VM (dockerfile-build.ts). The syntax
// (line continuations, the escape directive, comments, quoting in ENV and ARG) is dockerfile-ast's, the
// parser of the Docker language server; which instructions are accepted, and what each means here, is
// ours. Anything this builder cannot do as Docker would is refused up front with the line and the fix,
// never built differently: one stage, no build-time mounts, no ADD of a URL.
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
  /** `extract`: ADD's, a local tar archive (plain, gzip, bzip2, xz) is unpacked into dest instead of copied. */
  | { kind: "copy"; sources: string[]; dest: string; chown?: string; chmod?: string; extract?: true; cwd: string; source: StepSource }
  | { kind: "workdir"; path: string; source: StepSource };

export type BuildPlan = {
  /** The FROM image reference, build arguments substituted. */
  from: string;
  steps: BuildStep[];
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

/** What a COPY source may read: the path up to its first wildcard (`src/*.ts` reads from `src`). */
function globFreePrefix(path: string): string {
  const parts = path.split("/");
  const firstGlob = parts.findIndex((part) => /[*?[]/.test(part));
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

/** Parses and checks a Dockerfile; throws ImageInvalidError (a 400) naming the line and the fix. */
export function planDockerfile(text: string): BuildPlan {
  if (Buffer.byteLength(text) > MAX_DOCKERFILE_BYTES) throw new ImageInvalidError(`the Dockerfile is larger than ${MAX_DOCKERFILE_BYTES / 1024} KiB`);
  const instructions = DockerfileParser.parse(text).getInstructions();
  const args: Record<string, string> = {};
  const env: Record<string, string> = {};
  let from: string | undefined;
  let cwd = "/";
  let shell = ["/bin/sh", "-c"];
  let user: string | undefined;
  const steps: BuildStep[] = [];
  const contextPaths = new Set<string>();
  const ignored: StepSource[] = [];
  for (const instruction of instructions) {
    const keyword = instruction.getKeyword().toUpperCase();
    const content = instruction.getArgumentsContent() ?? "";
    const where: StepSource = { line: instruction.getRange().start.line + 1, text: `${keyword} ${content}`.trim() };
    const vars = { ...args, ...env };
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
      if (from !== undefined) refuse(where, "multi-stage builds are not supported yet: use one FROM");
      const image = substitute(instruction.getArguments()[0]?.getValue() ?? "", args);
      if (image === "") refuse(where, "FROM names no image");
      if (image === "scratch") refuse(where, "FROM scratch has no shell for RUN and no /bin/sh for the session's commands: start from an image with a shell (debian, alpine, busybox)");
      if (flagsOf(instruction).size > 0) refuse(where, "FROM flags (--platform) are not supported: the image is this host's platform");
      from = image;
      continue;
    }
    if (from === undefined) refuse(where, `${keyword} before FROM: a Dockerfile starts with FROM (ARG may come first)`);
    if (keyword === "ENV") {
      for (const property of (instruction as Instruction & { getProperties(): { getName(): string; getValue(): string | null }[] }).getProperties()) {
        env[property.getName()] = substitute(property.getValue() ?? "", vars);
      }
    } else if (keyword === "WORKDIR") {
      cwd = absoluteIn(cwd, substitute(content.trim(), vars));
      steps.push({ kind: "workdir", path: cwd, source: where });
    } else if (keyword === "USER") {
      const named = substitute(content.trim(), vars);
      if (!/^[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)?$/.test(named)) refuse(where, "USER takes a user and optionally a group, by name or id: USER node, USER 1000:1000");
      // The RUN steps after it run as that user (COPY and WORKDIR stay root's, as in Docker).
      user = named === "root" || named === "0" || named === "0:0" || named === "root:root" ? undefined : named;
    } else if (keyword === "SHELL") {
      const form = execForm(content);
      if (!form) refuse(where, 'SHELL takes the exec form, e.g. SHELL ["/bin/bash", "-c"]');
      shell = form;
    } else if (keyword === "RUN") {
      if (flagsOf(instruction).size > 0) refuse(where, "RUN flags (--mount, --network, --security) are not supported: the build runs each RUN in the build VM as it is");
      // Build arguments reach RUN as environment variables, as in Docker; ENV wins over ARG.
      steps.push({ kind: "run", argv: execForm(content) ?? [...shell, content], env: { ...args, ...env }, cwd, ...(user === undefined ? {} : { user }), source: where });
    } else if (keyword === "COPY" || keyword === "ADD") {
      const flags = flagsOf(instruction);
      const unknown = [...flags.keys()].filter((name) => name !== "chown" && name !== "chmod");
      if (unknown.length > 0) refuse(where, `${keyword} --${unknown[0]} is not supported: ${keyword} takes files of the repository, with --chown and --chmod`);
      const paths = (execForm(content) ?? instruction.getArguments().filter((arg) => !arg.getValue().startsWith("--")).map((arg) => arg.getValue())).map((path) => substitute(path, vars));
      if (paths.length < 2) refuse(where, `${keyword} needs a source and a destination`);
      const remote = paths.slice(0, -1).find((path) => REMOTE_SOURCE.test(path));
      if (remote) refuse(where, `ADD of a URL (${remote.slice(0, 80)}) is not supported: fetch it in a RUN step (curl or wget; RUN reaches what the session's network policy allows)`);
      const sources = paths.slice(0, -1).map((path) => contextPath(path, where));
      for (const path of sources) contextPaths.add(globFreePrefix(path));
      const extract = keyword === "ADD" ? { extract: true as const } : {};
      steps.push({ kind: "copy", sources, dest: absoluteIn(cwd, paths.at(-1)!), chown: flags.get("chown"), chmod: flags.get("chmod"), ...extract, cwd, source: where });
    } else {
      refuse(where, `unknown instruction ${keyword}`);
    }
    if (steps.length > MAX_STEPS) refuse(where, `more than ${MAX_STEPS} steps`);
  }
  if (from === undefined) throw new ImageInvalidError("the Dockerfile has no FROM: start it with FROM <image>, e.g. FROM debian:bookworm-slim");
  return { from, steps, contextPaths: [...contextPaths].sort(), ignored };
}
