// Images from a Dockerfile, built in a real gVisor VM: FROM an image on a registry on the host's loopback,
// ENV, ARG, WORKDIR, COPY from the context and RUN; the image boots and holds what the build wrote. A RUN
// that writes into the context or anywhere else leaves nothing on the host; a failing step and an image
// past the size limit publish nothing and leave no VM behind.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildFromDockerfile, type DockerfileBuild } from "../../app/images/dockerfile-build";
import { planDockerfile } from "../../app/images/dockerfile";
import { parseReference } from "../../app/images/image-choice";
import { pullRootfs } from "../../app/images/oci-pull";
import { ImageSizeExceeded } from "../../app/images/size-watch";
import { startRegistry, type Registry } from "../fixtures/oci-registry";
import { makeTempDir } from "../helpers";
import { sh } from "../runtime/exec-capture";
import { expectNoGvisorLeaksAndCleanUp, makeGvisorFixture } from "../runtime/gvisor-target";
import type { LocalFixture } from "../runtime/local-target";

const MIB = 2 ** 20;

describe("Dockerfile builds (gVisor)", () => {
  let fixture: LocalFixture;
  let registry: Registry;
  let scratch: string;
  let context: string;
  let base: string;
  let builds = 0;

  beforeAll(async () => {
    fixture = await makeGvisorFixture();
    registry = await startRegistry();
    scratch = makeTempDir("ss-dockerfile-");
    context = makeTempDir("ss-dockerfile-ctx-");
    writeFileSync(join(context, "greeting.txt"), "from the repository\n");
    mkdirSync(join(context, "conf"));
    writeFileSync(join(context, "conf/app.conf"), "port=3000\n");
    const reference = parseReference(`${registry.address}/team/base:1`);
    const digest = await registry.push("team/base", "1", "base-marker");
    base = join(scratch, "base");
    await pullRootfs(reference, digest, base, () => {}, 256 * MIB);
  }, 600_000);

  afterAll(async () => {
    for (const vm of await fixture.driver.list({})) await fixture.driver.remove(vm.name);
    await registry?.stop();
    rmSync(scratch, { recursive: true, force: true });
    rmSync(context, { recursive: true, force: true });
    expectNoGvisorLeaksAndCleanUp(fixture);
  }, 120_000);

  function build(dockerfile: string, overrides: Partial<DockerfileBuild> = {}): { run: Promise<void>; rootfs: string; lines: string[] } {
    const lines: string[] = [];
    const rootfs = join(scratch, `image-${++builds}`);
    const run = buildFromDockerfile({
      driver: fixture.driver,
      plan: planDockerfile(dockerfile),
      bases: { [`${registry.address}/team/base:1`]: base },
      contextDir: context,
      rootfs,
      vmName: `build-${process.pid}-${builds}`,
      labels: {},
      cpus: 1,
      memoryMib: 256,
      limitBytes: 256 * MIB,
      stepTimeoutMs: 60_000,
      onLine: (line) => lines.push(line),
      ...overrides,
    });
    return { run, rootfs, lines };
  }

  test("FROM the loopback registry, ARG, ENV, WORKDIR, COPY and RUN → the image holds the base, the copies and what RUN wrote; it boots and reads them", async () => {
    const { run, rootfs, lines } = build(
      [
        `FROM ${registry.address}/team/base:1`,
        "ARG WHO=the-builder",
        "ENV GREETING=hello",
        "WORKDIR /opt/app",
        "COPY greeting.txt ./",
        "COPY conf/ /etc/app/",
        'RUN echo "$GREETING from $WHO in $(pwd)" > /etc/built-marker && cat greeting.txt >> /etc/built-marker',
        'CMD ["sleep", "1"]',
      ].join("\n"),
    );
    await run;
    expect(readFileSync(join(rootfs, "etc/built-marker"), "utf8")).toBe("hello from the-builder in /opt/app\nfrom the repository\n");
    expect(readFileSync(join(rootfs, "opt/app/greeting.txt"), "utf8")).toBe("from the repository\n");
    expect(readFileSync(join(rootfs, "etc/app/app.conf"), "utf8")).toBe("port=3000\n");
    expect(readFileSync(join(rootfs, "etc/image-marker"), "utf8")).toBe("base-marker\n");
    expect(lines).toContain("build: line 8: CMD has no effect on a VM image (ignored)");
    expect(lines.some((line) => line.startsWith("step 4/4: line 7: RUN echo"))).toBe(true);
    // A session's VM boots the image.
    const vm = `built-${process.pid}`;
    await fixture.driver.create({ name: vm, image: rootfs, cpus: 1, memoryMib: 128, mounts: [], tmpSizeMib: 16, volume: { name: vm }, labels: {}, network: { mode: "none" } });
    expect((await sh(fixture.driver, vm, "cat /etc/built-marker /opt/app/greeting.txt")).stdout).toBe("hello from the-builder in /opt/app\nfrom the repository\nfrom the repository\n");
    await fixture.driver.remove(vm);
  }, 180_000);

  test("USER → the RUN steps after it run as that user (by id, or by a name the image's /etc/passwd gives, with its HOME); COPY stays root's; USER root goes back; an unknown name fails the build", async () => {
    const { run, rootfs } = build(
      [
        `FROM ${registry.address}/team/base:1`,
        "RUN mkdir -p -m 777 /opt/shared && echo 'app:x:1234:1235:app:/opt/shared:/bin/sh' >> /etc/passwd",
        "USER 1000:1000",
        "RUN id -u > /opt/shared/by-id && id -g >> /opt/shared/by-id && { touch /etc/as-1000 2>/dev/null || echo denied > /opt/shared/etc-write; }",
        "USER app",
        'RUN echo "$(id -u):$(id -g) $HOME" > /opt/shared/by-name',
        "COPY greeting.txt /opt/shared/copied",
        "USER root",
        "RUN id -u > /etc/root-again",
      ].join("\n"),
    );
    await run;
    const read = (path: string) => readFileSync(join(rootfs, path), "utf8");
    expect([read("opt/shared/by-id"), read("opt/shared/etc-write"), read("opt/shared/by-name"), read("etc/root-again")]).toEqual(["1000\n1000\n", "denied\n", "1234:1235 /opt/shared\n", "0\n"]);
    expect(existsSync(join(rootfs, "etc/as-1000"))).toBe(false);
    expect([statSync(join(rootfs, "opt/shared/by-name")).uid, statSync(join(rootfs, "opt/shared/copied")).uid]).toEqual([1234, 0]);

    const unknown = build([`FROM ${registry.address}/team/base:1`, "USER nobody-here", "RUN true"].join("\n"));
    await expect(unknown.run).rejects.toThrow(/Dockerfile line 3 \(RUN true\): USER nobody-here: unable to find user nobody-here: no matching entries in \/etc\/passwd/);
    expect(existsSync(unknown.rootfs)).toBe(false);
  }, 180_000);

  test("multi-stage → each stage in its own VM (a stage FROM another keeps its ENV); COPY --from a stage and from a registry image, owned by root; the image holds only the last stage; a stage nothing needs is never built", async () => {
    const tools = `${registry.address}/team/tools:2`;
    const toolsRootfs = join(scratch, "tools");
    await pullRootfs(parseReference(tools), await registry.push("team/tools", "2", "tools-marker"), toolsRootfs, () => {}, 256 * MIB);
    const dockerfile = [
      `FROM ${registry.address}/team/base:1 AS build`,
      "ENV OUT=/out",
      "RUN mkdir -p -m 777 $OUT && echo only-in-stage-one > /etc/stage-one-only",
      "USER 1000",
      "RUN echo built-in-stage-one > $OUT/artifact",
      `FROM ${registry.address}/team/base:1 AS unused`,
      "RUN exit 7",
      "FROM build AS test",
      'RUN echo "$OUT" > /out/env-inherited',
      `FROM ${registry.address}/team/base:1`,
      "COPY --from=test /out /opt/out",
      `COPY --from=${tools} /etc/image-marker /opt/tools-marker`,
      // /bin is a symlink to usr/bin in that image: followed inside it, as BuildKit does.
      `COPY --from=${tools} /bin/sh /opt/tools-sh`,
    ].join("\n");
    const { run, rootfs, lines } = build(dockerfile, { bases: { [`${registry.address}/team/base:1`]: base, [tools]: toolsRootfs } });
    await run;
    const read = (path: string) => readFileSync(join(rootfs, path), "utf8");
    expect([read("opt/out/artifact"), read("opt/out/env-inherited"), read("opt/tools-marker")]).toEqual(["built-in-stage-one\n", "/out\n", "tools-marker\n"]);
    expect(statSync(join(rootfs, "opt/out/artifact")).uid).toBe(0);
    // /bin/sh -> usr/bin/sh -> busybox: the file it leads to, as BuildKit copies a source's symlinks.
    expect(lstatSync(join(rootfs, "opt/tools-sh")).size).toBe(lstatSync(join(toolsRootfs, "usr/bin/busybox")).size);
    expect(existsSync(join(rootfs, "etc/stage-one-only"))).toBe(false);
    expect(lines.filter((line) => /^build: stage \d\/3 .*booting/.test(line))).toEqual([
      `build: stage 1/3 (build, from ${registry.address}/team/base:1): booting the build VM (its writes stay in its memory)`,
      "build: stage 2/3 (test, from build): booting the build VM (its writes stay in its memory)",
      `build: stage 3/3 (unnamed, from ${registry.address}/team/base:1): booting the build VM (its writes stay in its memory)`,
    ]);
    expect(await fixture.driver.list({})).toEqual([]);
  }, 240_000);

  test(".dockerignore → COPY leaves out what it excludes (a directory anywhere, a pattern, taken back by a ! line), wildcards match only what it keeps; odd names and a symlink copy as they are; ADD unpacks a gzip or xz tar and copies anything else; an excluded or missing source fails with its line", async () => {
    const ctx = makeTempDir("ss-dockerignore-ctx-");
    try {
      const files: Record<string, string> = {
        "app/index.js": "index\n",
        "app/node_modules/dep/index.js": "dep\n",
        "app/debug.log": "debug\n",
        "app/keep.log": "keep\n",
        "app/-dash name": "dash\n",
        "app/new\nline": "newline\n",
        "app/src/a.ts": "a\n",
        "app/src/b.ts": "b\n",
        "app/src/c.md": "c\n",
        "app/src/skip.ts": "skip\n",
        "secret.env": "TOKEN=1\n",
      };
      for (const [path, content] of Object.entries(files)) {
        mkdirSync(join(ctx, path, ".."), { recursive: true });
        writeFileSync(join(ctx, path), content);
      }
      symlinkSync("index.js", join(ctx, "app/link"));
      mkdirSync(join(ctx, "bundle/inner"), { recursive: true });
      writeFileSync(join(ctx, "bundle/inner/packed.txt"), "packed\n");
      for (const [name, flag] of [["bundle.tgz", "-z"], ["bundle.txz", "-J"]] as const) Bun.spawnSync(["tar", flag, "-cf", join(ctx, name), "-C", join(ctx, "bundle"), "inner"]);
      rmSync(join(ctx, "bundle"), { recursive: true });
      const dockerignore = "**/node_modules\n*.env\napp/*.log\n!app/keep.log\napp/src/skip.ts\n";
      const dockerfile = [`FROM ${registry.address}/team/base:1`, "COPY app /opt/app", "COPY app/src/*.ts /opt/ts/", "ADD bundle.tgz /opt/gz/", "ADD bundle.txz /opt/xz", "ADD app/index.js /opt/added.js"];
      const { run, rootfs } = build(dockerfile.join("\n"), { contextDir: ctx, dockerignore });
      await run;
      expect([readFileSync(join(rootfs, "opt/gz/inner/packed.txt"), "utf8"), readFileSync(join(rootfs, "opt/xz/inner/packed.txt"), "utf8"), readFileSync(join(rootfs, "opt/added.js"), "utf8")]).toEqual(["packed\n", "packed\n", "index\n"]);
      const tree = (dir: string): string[] =>
        readdirSync(dir, { recursive: true, encoding: "utf8" }).map(String).sort();
      expect(tree(join(rootfs, "opt/app"))).toEqual(["-dash name", "index.js", "keep.log", "link", "new\nline", "src", "src/a.ts", "src/b.ts", "src/c.md"]);
      expect(readlinkSync(join(rootfs, "opt/app/link"))).toBe("index.js");
      expect(readFileSync(join(rootfs, "opt/app/new\nline"), "utf8")).toBe("newline\n");
      expect(tree(join(rootfs, "opt/ts"))).toEqual(["a.ts", "b.ts"]);

      const excluded = build([`FROM ${registry.address}/team/base:1`, "COPY secret.env /etc/"].join("\n"), { contextDir: ctx, dockerignore });
      await expect(excluded.run).rejects.toThrow(/Dockerfile line 2 \(COPY secret.env \/etc\/\): COPY source secret.env is not in the build context, or .dockerignore leaves it out/);
      const none = build([`FROM ${registry.address}/team/base:1`, "COPY *.env /etc/"].join("\n"), { contextDir: ctx, dockerignore });
      await expect(none.run).rejects.toThrow(/COPY \*.env matches no file of the build context \(or .dockerignore leaves them out\)/);
      expect(await fixture.driver.list({})).toEqual([]);
    } finally {
      rmSync(ctx, { recursive: true, force: true });
    }
  }, 180_000);

  test("a RUN that writes into the context, over a context file and into /tmp → nothing lands on the host; the image keeps none of it", async () => {
    const marker = join(context, "pwned-by-build");
    const { run, rootfs } = build(
      [`FROM ${registry.address}/team/base:1`, `RUN touch ${marker}; echo guest > ${context}/greeting.txt; touch /tmp/in-tmp; rm -rf ${context}/conf; echo done > /etc/done`].join("\n"),
    );
    await run;
    expect(existsSync(marker)).toBe(false);
    expect(readFileSync(join(context, "greeting.txt"), "utf8")).toBe("from the repository\n");
    expect(readdirSync(context).sort()).toEqual(["conf", "greeting.txt"]);
    expect(readFileSync(join(rootfs, "etc/done"), "utf8")).toBe("done\n");
    expect(existsSync(join(rootfs, "tmp/in-tmp"))).toBe(false);
    expect(existsSync(join(rootfs, context.slice(1)))).toBe(false);
  }, 180_000);

  test("a RUN that prints thousands of lines and a 40 KB line → the build goes on; progress shows the first 500 lines, each cut at 1000 characters, then says more followed", async () => {
    const script = 's=xxxxxxxxxx; for n in 1 2 3 4 5 6 7 8 9 10 11 12; do s=$s$s; done; printf %s "$s"; echo; i=0; while [ $i -lt 3000 ]; do echo "line $i"; i=$((i+1)); done';
    const { run, rootfs, lines } = build([`FROM ${registry.address}/team/base:1`, `RUN ${script}`].join("\n"));
    await run;
    expect(existsSync(join(rootfs, "etc/image-marker"))).toBe(true);
    const output = lines.filter((line) => line.startsWith("step 1/1 | "));
    expect(output).toHaveLength(501);
    expect(output[0]).toBe(`step 1/1 | ${"x".repeat(1000)}`);
    expect(output[1]).toBe("step 1/1 | line 0");
    expect(output.at(-1)).toBe("step 1/1 | (more output; only the first 500 lines are shown)");
    expect(Math.max(...output.map((line) => line.length))).toBeLessThanOrEqual("step 1/1 | ".length + 1000);
  }, 180_000);

  test("a failing RUN → the error names its line, its exit code and its last output; nothing is published and no VM is left", async () => {
    const { run, rootfs } = build([`FROM ${registry.address}/team/base:1`, "RUN echo first", "RUN echo about to fail; exit 3"].join("\n"));
    await expect(run).rejects.toThrow(/Dockerfile line 3 \(RUN echo about to fail; exit 3\) exited with 3:\nabout to fail/);
    expect(existsSync(rootfs)).toBe(false);
    expect(existsSync(`${rootfs}.partial`)).toBe(false);
    expect(await fixture.driver.list({})).toEqual([]);
  }, 180_000);

  test("a build past the image size limit → cut while it is exported; nothing is published", async () => {
    const { run, rootfs } = build([`FROM ${registry.address}/team/base:1`, "RUN echo small"].join("\n"), { limitBytes: MIB / 2 });
    await expect(run).rejects.toBeInstanceOf(ImageSizeExceeded);
    expect(existsSync(rootfs)).toBe(false);
    expect(await fixture.driver.list({})).toEqual([]);
  }, 180_000);
});
