// The Dockerfile reader: what each accepted instruction becomes, and each refusal with its line and fix.
import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildDigest } from "../../app/images/build-context";
import { planDockerfile, substitute } from "../../app/images/dockerfile";
import { CONTEXT_RECHECK_MS, createDockerfileSources, readDockerfileSource } from "../../app/images/dockerfile-source";

/** Runs `check` with a fresh temp dir, removed after it whatever happens. */
function inTempDir(prefix: string, check: (dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  try {
    check(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("Dockerfile plan", () => {
  test("ARG, FROM, ENV, WORKDIR, RUN (shell and exec form, continued lines), COPY with flags and wildcards, SHELL → steps in order; CMD and EXPOSE ignored", () => {
    const plan = planDockerfile(
      [
        "# syntax=docker/dockerfile:1",
        "ARG REGISTRY=127.0.0.1:5000",
        "FROM ${REGISTRY}/team/base:1",
        'ENV GREETING="hello there" HOME_DIR=/opt',
        "WORKDIR $HOME_DIR/app",
        "RUN echo $GREETING \\",
        "  > greeting.txt",
        'RUN ["/bin/echo", "exec form"]',
        "COPY --chown=1000:1000 --chmod=0644 src/*.ts config/ ./",
        'SHELL ["/bin/bash", "-c"]',
        "RUN echo bash",
        'CMD ["node", "server.js"]',
        "EXPOSE 3000",
      ].join("\n"),
    );
    expect(plan.images).toEqual(["127.0.0.1:5000/team/base:1"]);
    expect(plan.stages).toHaveLength(1);
    const steps = plan.stages[0]!.steps;
    expect(steps.map((step) => step.kind)).toEqual(["workdir", "run", "run", "copy", "run"]);
    expect(steps[0]).toMatchObject({ path: "/opt/app" });
    expect(steps[1]).toMatchObject({ argv: ["/bin/sh", "-c", expect.stringMatching(/^echo \$GREETING\s+> greeting.txt$/)], cwd: "/opt/app", env: { REGISTRY: "127.0.0.1:5000", GREETING: "hello there", HOME_DIR: "/opt" }, source: { line: 6 } });
    expect(steps[2]).toMatchObject({ argv: ["/bin/echo", "exec form"] });
    expect(steps[3]).toMatchObject({ sources: ["src/*.ts", "config"], dest: "/opt/app/./", chown: "1000:1000", chmod: "0644" });
    expect(steps[4]).toMatchObject({ argv: ["/bin/bash", "-c", "echo bash"] });
    expect(plan.contextPaths).toEqual(["config", "src"]);
    expect(plan.ignored.map((where) => where.line)).toEqual([12, 13]);
  });

  test.each([
    ["FROM a AS one\nFROM b AS ONE", /line 2 .*a stage named one comes earlier/],
    ["FROM a AS b c", /FROM takes an image and optionally AS <name>/],
    ["FROM a AS self\nCOPY --from=self /x /x", /names the stage it is in/],
    ["FROM a\nCOPY --from=other ../x /x", /COPY --from source "..\/x" has a ".." in it/],
    ["FROM scratch", /FROM scratch has no shell/],
    ["RUN true", /line 1 .*RUN before FROM/],
    ["FROM a\nUSER node extra", /line 2 .*USER takes a user and optionally a group/],
    ["FROM a\nADD https://example.com/x /x", /line 2 .*ADD of a URL \(https:\/\/example.com\/x\) is not supported: fetch it in a RUN step/],
    ["FROM a\nADD git@github.com:org/repo.git /src", /ADD of a URL .* is not supported/],
    ["FROM a\nADD --checksum=sha256:00 x /x", /ADD --checksum is not supported/],
    ["FROM a\nCOPY ../secret /x", /reaches above the build context/],
    ["FROM a\nRUN --mount=type=cache,target=/x true", /RUN flags .* are not supported/],
    ["FROM a\nFROBNICATE", /unknown instruction FROBNICATE/],
    ["# only a comment", /has no FROM/],
  ])("%j → refused with the line and the fix", (text, reason) => {
    expect(() => planDockerfile(text)).toThrow(reason);
  });

  test("multi-stage → one stage per FROM, each with its own ENV, WORKDIR and USER (a stage FROM another inherits them); COPY --from a stage (by name or index) or an image; a stage the last one does not need is dropped and the rest renumbered", () => {
    const plan = planDockerfile(
      [
        "ARG BASE=127.0.0.1:5000/team/base:1",
        "FROM $BASE AS deps",
        "ENV STAGE=deps",
        "WORKDIR /deps",
        "RUN make deps",
        "FROM $BASE AS unused",
        "RUN echo never built",
        "FROM deps AS build",
        "RUN make",
        "FROM $BASE",
        "COPY --from=build /deps/out /opt/out",
        "COPY --from=0 /deps/lib /opt/lib",
        "COPY --from=127.0.0.1:5000/team/tools:2 /usr/bin/tool /usr/bin/",
        "COPY app.txt /opt/",
        "RUN echo $STAGE",
      ].join("\n"),
    );
    expect(plan.stages.map((stage) => stage.name ?? null)).toEqual(["deps", "build", null]);
    expect(plan.stages.map((stage) => stage.base)).toEqual([{ image: "127.0.0.1:5000/team/base:1" }, { stage: 0 }, { image: "127.0.0.1:5000/team/base:1" }]);
    expect(plan.images).toEqual(["127.0.0.1:5000/team/base:1", "127.0.0.1:5000/team/tools:2"]);
    expect(plan.stages[1]!.steps[0]).toMatchObject({ kind: "run", cwd: "/deps", env: { STAGE: "deps" } });
    const last = plan.stages[2]!.steps;
    expect(last.map((step) => (step.kind === "copy" ? step.from ?? "context" : step.kind))).toEqual([{ stage: 1 }, { stage: 0 }, { image: "127.0.0.1:5000/team/tools:2" }, "context", "run"]);
    expect(last[0]).toMatchObject({ sources: ["deps/out"], dest: "/opt/out" });
    expect(last[4]).toMatchObject({ cwd: "/", env: { BASE: "127.0.0.1:5000/team/base:1" } });
    expect(plan.contextPaths).toEqual(["app.txt"]);
  });

  test("USER → the RUN steps after it carry the user (COPY and WORKDIR do not); USER root, 0 or 0:0 goes back to none", () => {
    const plan = planDockerfile(["FROM a", "ARG WHO=node", "USER $WHO:staff", "RUN one", "COPY x /x", "USER 0", "RUN two", "USER 1000", "RUN three"].join("\n"));
    expect(plan.stages[0]!.steps.map((step) => (step.kind === "run" ? step.user : step.kind))).toEqual(["node:staff", "copy", undefined, "1000"]);
  });

  test("substitution: $X, ${X}, ${X:-default}, ${X:+alt}, and an escaped \\$ stays", () => {
    const vars = { A: "1", EMPTY: "" };
    expect(substitute("$A ${A} ${B:-two} ${EMPTY:-three} ${A:+yes} ${B:+no} \\$A $B", vars)).toBe("1 1 two three yes  $A ");
  });
});

describe("build digest", () => {
  test("same Dockerfile and files → same digest; an edit to the Dockerfile or to a copied file changes it; other files, a FIFO and a symlink out are never read", () => {
    inTempDir("ss-digest-", (dir) => {
      mkdirSync(join(dir, "src"));
      writeFileSync(join(dir, "src/a.txt"), "a\n");
      writeFileSync(join(dir, "other.txt"), "o\n");
      symlinkSync("/etc/shadow", join(dir, "src/link"));
      Bun.spawnSync(["mkfifo", join(dir, "src/fifo")]);
      const dockerfile = "FROM x\nCOPY src /src\n";
      const first = buildDigest(dockerfile, dir, ["src"], 2 ** 20);
      expect(first).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(buildDigest(dockerfile, dir, ["src"], 2 ** 20)).toBe(first);
      writeFileSync(join(dir, "other.txt"), "changed\n");
      expect(buildDigest(dockerfile, dir, ["src"], 2 ** 20)).toBe(first);
      expect(buildDigest(`${dockerfile}RUN true\n`, dir, ["src"], 2 ** 20)).not.toBe(first);
      writeFileSync(join(dir, "src/a.txt"), "b\n");
      expect(buildDigest(dockerfile, dir, ["src"], 2 ** 20)).not.toBe(first);
      expect(() => buildDigest(dockerfile, dir, ["src"], 1)).toThrow(/larger than the image limit/);
      // A copied path under a symlinked parent: the link is not followed, so the host's file is never read.
      symlinkSync("/etc", join(dir, "etc-link"));
      expect(buildDigest(dockerfile, dir, ["etc-link/passwd"], 1)).toMatch(/^sha256:/);
    });
  });

  test(".dockerignore → what it leaves out is never read (an edit to it changes nothing, its size does not count); an edit to the .dockerignore itself changes the digest", () => {
    inTempDir("ss-digest-ignore-", (dir) => {
      mkdirSync(join(dir, "src/node_modules/dep"), { recursive: true });
      writeFileSync(join(dir, "src/a.txt"), "a\n");
      writeFileSync(join(dir, "src/node_modules/dep/big.js"), "x".repeat(4096));
      writeFileSync(join(dir, "src/debug.log"), "1\n");
      writeFileSync(join(dir, "src/keep.log"), "1\n");
      const ignored = "**/node_modules\nsrc/*.log\n!src/keep.log\n";
      const dockerfile = "FROM x\nCOPY src /src\n";
      const first = buildDigest(dockerfile, dir, ["src"], 1024, ignored);
      writeFileSync(join(dir, "src/node_modules/dep/big.js"), "y".repeat(8192));
      writeFileSync(join(dir, "src/debug.log"), "2\n");
      expect(buildDigest(dockerfile, dir, ["src"], 1024, ignored)).toBe(first);
      writeFileSync(join(dir, "src/keep.log"), "2\n"); // taken back by the ! line: read
      const second = buildDigest(dockerfile, dir, ["src"], 1024, ignored);
      expect(second).not.toBe(first);
      expect(buildDigest(dockerfile, dir, ["src"], 1024, `${ignored}# a comment\n`)).not.toBe(second);
      expect(() => buildDigest(dockerfile, dir, ["src"], 1024)).toThrow(/larger than the image limit .*leave files out with .dockerignore/);
    });
  });
});

describe("reading the Dockerfile from the repository", () => {
  test("a Dockerfile that is a symlink out, under a symlinked directory, a FIFO or missing → 400 with the reason; nothing outside is read", () => {
    inTempDir("ss-dockerfile-src-", (dir) => {
      mkdirSync(join(dir, ".opencode-sandbox"));
      writeFileSync(join(dir, ".opencode-sandbox/Dockerfile"), "FROM 127.0.0.1:5000/base:1\nRUN true\n");
      expect(readDockerfileSource(dir, ".opencode-sandbox/Dockerfile", 2 ** 20)).toMatchObject({ path: ".opencode-sandbox/Dockerfile", plan: { images: ["127.0.0.1:5000/base:1"] }, digest: expect.stringMatching(/^sha256:/) });
      symlinkSync("/etc/passwd", join(dir, "link-out"));
      expect(() => readDockerfileSource(dir, "link-out", 2 ** 20)).toThrow(/resolves outside the repository/);
      symlinkSync("/etc", join(dir, "etc-dir"));
      expect(() => readDockerfileSource(dir, "etc-dir/passwd", 2 ** 20)).toThrow(/resolves outside the repository/);
      Bun.spawnSync(["mkfifo", join(dir, "fifo")]);
      expect(() => readDockerfileSource(dir, "fifo", 2 ** 20)).toThrow(/is not a regular file/);
      expect(() => readDockerfileSource(dir, "missing/Dockerfile", 2 ** 20)).toThrow(/has no Dockerfile at "missing\/Dockerfile"/);
    });
  });

  test("its .dockerignore: <Dockerfile>.dockerignore beside it, else .dockerignore at the top; one that is a symlink out → 400; none → the whole context", () => {
    inTempDir("ss-dockerignore-src-", (dir) => {
      mkdirSync(join(dir, ".opencode-sandbox"));
      writeFileSync(join(dir, ".opencode-sandbox/Dockerfile"), "FROM 127.0.0.1:5000/base:1\nCOPY . /app\n");
      expect(readDockerfileSource(dir, ".opencode-sandbox/Dockerfile", 2 ** 20).dockerignore).toBeUndefined();
      writeFileSync(join(dir, ".dockerignore"), "node_modules\n");
      expect(readDockerfileSource(dir, ".opencode-sandbox/Dockerfile", 2 ** 20).dockerignore).toBe("node_modules\n");
      writeFileSync(join(dir, ".opencode-sandbox/Dockerfile.dockerignore"), "dist\n");
      expect(readDockerfileSource(dir, ".opencode-sandbox/Dockerfile", 2 ** 20).dockerignore).toBe("dist\n");
      rmSync(join(dir, ".opencode-sandbox/Dockerfile.dockerignore"));
      rmSync(join(dir, ".dockerignore"));
      symlinkSync("/etc/passwd", join(dir, ".dockerignore"));
      expect(() => readDockerfileSource(dir, ".opencode-sandbox/Dockerfile", 2 ** 20)).toThrow(/the .dockerignore ".dockerignore" resolves outside the repository/);
    });
  });
});

describe("the Dockerfile at each command", () => {
  test("an edit to the Dockerfile counts at the next command; a copied file is digested again once a minute has passed, not at every command", () => {
    inTempDir("ss-dockerfile-each-", (dir) => {
      let clock = 1_000_000;
      const sources = createDockerfileSources(() => clock);
      writeFileSync(join(dir, "Dockerfile"), "FROM 127.0.0.1:5000/base:1\nCOPY app.txt /app.txt\n");
      writeFileSync(join(dir, "app.txt"), "one\n");
      const first = sources(dir, "Dockerfile", 2 ** 20).digest;
      writeFileSync(join(dir, "app.txt"), "two\n");
      clock += CONTEXT_RECHECK_MS - 1;
      expect(sources(dir, "Dockerfile", 2 ** 20).digest).toBe(first);
      clock += 1;
      const second = sources(dir, "Dockerfile", 2 ** 20).digest;
      expect(second).not.toBe(first);
      writeFileSync(join(dir, "Dockerfile"), "FROM 127.0.0.1:5000/base:1\nCOPY app.txt /app.txt\nRUN true\n");
      expect(sources(dir, "Dockerfile", 2 ** 20).digest).not.toBe(second);
    });
  });
});
