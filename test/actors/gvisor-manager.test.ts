// The gvisor tier end to end: the real manager process started with SANDBOX_RUNTIME=gvisor runs a session's
// commands in a gVisor VM — gVisor's kernel answers, the repository is written as its owner, the egress
// proxy is reached through the bind-mounted host socket and the in-VM forwarder — and a deleted session
// leaves no VM, volume, mount, runsc process or cgroup. Targets are loopback servers on the host. A session's
// image can be its repository's Dockerfile, built inside a gVisor VM from an image on a loopback registry.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createGvisorDriver } from "../../runtime/gvisor/index";
import { cgroupDirs, detectCgroupLayout } from "../../runtime/local/cgroup-layout";
import { createClient } from "../../sdk/index";
import { startRegistry, type Registry } from "../fixtures/oci-registry";
import { makeTempDir } from "../helpers";
import { eventually } from "./fixture";
import { startManager, type ManagerProcess } from "../manager-process";
import { prepareLocalRuntime } from "../runtime/local-target";
import { removeGvisorManagerState } from "../runtime/gvisor-target";

let image: string;
let dataDir: string;
let repo: string;
let manager: ManagerProcess;
let client: ReturnType<typeof createClient>;
let server: ReturnType<typeof Bun.serve>;
let registry: Registry;

async function start(): Promise<void> {
  manager = await startManager(dataDir, { SANDBOX_RUNTIME: "gvisor", SANDBOX_CGROUP_PARENT: cgroupParent, SANDBOX_ROOTFS_DIR: image });
  client = createClient({ url: manager.url, token: manager.token });
}
const cgroupParent = `ss-gvisor-${randomBytes(3).toString("hex")}`;
const owner = { uid: 1234, gid: 1235 };

const driver = () => createGvisorDriver({ stateDir: join(`${dataDir}-runtime`, "gvisor"), rootfsDir: image, cgroupParent });

beforeAll(async () => {
  image = await prepareLocalRuntime();
  dataDir = makeTempDir("ss-gvisor-");
  repo = makeTempDir("ss-gvisor-repo-");
  chownSync(repo, owner.uid, owner.gid);
  server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("hello-from-host") });
  registry = await startRegistry();
  await start();
}, 600_000);

afterAll(async () => {
  server?.stop(true);
  await registry?.stop();
  if (manager && manager.proc.exitCode === null) await manager.stop();
  if (dataDir) await removeGvisorManagerState(dataDir, image, cgroupParent);
  if (repo) rmSync(repo, { recursive: true, force: true });
}, 120_000);

describe("gvisor tier (real manager, SANDBOX_RUNTIME=gvisor)", () => {
  test("health → runtime gvisor, chosen because SANDBOX_RUNTIME says so", async () => {
    const health = await client.health();
    expect(health.runtime.name).toBe("gvisor");
    expect(health.runtime.reason).toStartWith("SANDBOX_RUNTIME=gvisor");
  });

  test("a session's command → runs on gVisor's kernel; repository files land as the repository's owner", async () => {
    await client.sessions.register({ id: "ses_gvisor", directory: repo });
    const result = await client.run("ses_gvisor", { command: "uname -r; ls -d .; echo hi > from-guest.txt; stat -c '%u' from-guest.txt", cwd: repo });
    expect(result.exitCode).toBe(0);
    const [kernel, listed, guestOwner] = result.stdout.trim().split("\n");
    expect(kernel).not.toBe(readFileSync("/proc/sys/kernel/osrelease", "utf8").trim());
    expect(listed).toBe(".");
    expect(guestOwner).toBe("0");
    const st = statSync(join(repo, "from-guest.txt"));
    expect({ uid: st.uid, gid: st.gid }).toEqual(owner);
  });

  test("egress allowlist → the host proxy answers through the VM's forwarder and the bound host socket", async () => {
    await client.sandbox.set("ses_gvisor", { network: { mode: "allowlist", allow: ["loopback"] } });
    const result = await client.run("ses_gvisor", { command: `curl -s -S --max-time 10 --noproxy '' -x "$HTTP_PROXY" http://127.0.0.1:${server.port}/`, cwd: repo });
    expect(result.stdout).toBe("hello-from-host");
    const direct = await client.run("ses_gvisor", { command: `curl -s --max-time 5 --noproxy '*' http://127.0.0.1:${server.port}/; echo "exit=$?"`, cwd: repo });
    expect(direct.stdout).toContain("exit=7"); // the guest's loopback is the Sentry's own
  });

  test("stdin, files and a forwarded port → work on gVisor as on the container tier (each runs through runsc exec)", async () => {
    const piped = await client.run("ses_gvisor", { command: "sha256sum", cwd: repo, stdin: "piped into gVisor\n" });
    expect(piped.stdout.split(" ")[0]).toBe(new Bun.CryptoHasher("sha256").update("piped into gVisor\n").digest("hex"));
    const data = randomBytes(256 * 1024);
    await client.files.write("ses_gvisor", "/home/agent/blob.bin", data);
    expect(Buffer.from(await client.files.read("ses_gvisor", "/home/agent/blob.bin")).equals(data)).toBe(true);
    await client.run("ses_gvisor", { command: "mkdir -p /tmp/www && echo from-gvisor > /tmp/www/index.html && (cd /tmp/www && python3 -m http.server 8130 >/dev/null 2>&1 &) && sleep 1", cwd: repo });
    const forward = await client.ports.open("ses_gvisor", { port: 8130 });
    expect(await (await fetch(forward.url)).text()).toBe("from-gvisor\n");
  });

  test("a session's image is its repository's Dockerfile → its FROM only from a registry the session's policy reaches; built inside a gVisor VM and booted; a RUN reaches what the session's policy allows; a RUN that writes into the repository leaves nothing on the host; a second repository with the same Dockerfile reuses the build; an edit rebuilds", async () => {
    // A busybox image without socat: the build VM and the session's VM reach out through the VM relay.
    await registry.push("team/base", "1", "dockerfile-base");
    const dockerfile = (extra: string) =>
      [
        `FROM ${registry.address}/team/base:1`,
        "ENV GREETING=built",
        "WORKDIR /opt/app",
        "COPY app.txt ./",
        'RUN echo "$GREETING $(cat app.txt)" > /etc/built-marker',
        // busybox wget takes the build's http_proxy: the host proxy lets the session's `loopback` through.
        // and refuses what the policy does not allow (no DNS, no connection: the proxy answers 403).
        `RUN wget -q -O /etc/fetched http://127.0.0.1:${server.port}/ && { wget -O - http://example.com/ 2> /etc/denied || true; }`,
        extra,
      ].join("\n");
    const repoOf = (name: string) => {
      const dir = makeTempDir(`ss-gvisor-dockerfile-${name}-`);
      mkdirSync(join(dir, ".opencode-sandbox"));
      writeFileSync(join(dir, "app.txt"), "from-the-repository\n");
      writeFileSync(join(dir, ".opencode-sandbox/Dockerfile"), dockerfile(`RUN touch ${dir}/host-marker || true`));
      return dir;
    };
    const [first, second] = [repoOf("a"), repoOf("b")];
    // The same content in both (the RUN line names each repository's own path): make it the same.
    writeFileSync(join(second, ".opencode-sandbox/Dockerfile"), readFileSync(join(first, ".opencode-sandbox/Dockerfile")));
    try {
      const choice = { kind: "dockerfile" as const, path: ".opencode-sandbox/Dockerfile" };
      await client.sessions.register({ id: "ses_df_a", directory: first });
      // The repository names the registry: the host pulls only from where the session itself may connect.
      await client.sandbox.set("ses_df_a", { image: choice, network: { mode: "none" } });
      await expect(client.run("ses_df_a", { command: "true", cwd: first })).rejects.toThrow(/the Dockerfile's image 127\.0\.0\.1:\d+\/team\/base \(FROM or COPY --from\) is pulled only from where this session may connect.*127\.0\.0\.1:\d+/);
      const loopback = { mode: "allowlist" as const, allow: ["loopback"] };
      await client.sandbox.set("ses_df_a", { network: loopback });
      const stopEvents = new AbortController();
      const imageEvents: { image: string; phase: string; detail: string | null }[] = [];
      void (async () => {
        for await (const event of client.events(stopEvents.signal)) if (event.type === "image") imageEvents.push(event);
      })().catch(() => undefined);
      expect(await client.run("ses_df_a", { command: "cat /etc/built-marker /opt/app/app.txt /etc/image-marker /etc/fetched", cwd: first, timeoutMs: 120_000 })).toMatchObject({
        exitCode: 0,
        stdout: "built from-the-repository\nfrom-the-repository\ndockerfile-base\nhello-from-host",
      });
      expect((await client.run("ses_df_a", { command: "cat /etc/denied", cwd: first })).stdout).toContain("403");
      // The session's own VM, on the same image without socat, reaches out too.
      expect((await client.run("ses_df_a", { command: `wget -q -O - http://127.0.0.1:${server.port}/`, cwd: first })).stdout).toBe("hello-from-host");
      expect(existsSync(join(first, "host-marker"))).toBe(false);
      const built = () => client.images.list().then(({ images }) => images.filter((view) => view.image.startsWith("dockerfile:")));
      expect(await built()).toEqual([expect.objectContaining({ status: "ready", digest: expect.stringMatching(/^sha256:/), detail: expect.stringContaining("built from .opencode-sandbox/Dockerfile") })]);
      // Progress as for a pull: building, then each step's line, then ready (the base's own pull has its events).
      await eventually(() => imageEvents.some((event) => event.image.startsWith("dockerfile:") && event.phase === "ready"), 10_000);
      stopEvents.abort();
      const build = imageEvents.filter((event) => event.image.startsWith("dockerfile:"));
      expect(build[0]?.phase).toBe("building");
      expect(build.some((event) => event.phase === "progress" && /^step 3\/5: line 5: RUN echo/.test(event.detail ?? ""))).toBe(true);
      expect(build.at(-1)?.phase).toBe("ready");

      await client.sessions.register({ id: "ses_df_b", directory: second });
      await client.sandbox.set("ses_df_b", { image: choice, network: loopback });
      expect((await client.run("ses_df_b", { command: "cat /etc/built-marker", cwd: second, timeoutMs: 120_000 })).stdout).toBe("built from-the-repository\n");
      expect(await built()).toHaveLength(1);

      writeFileSync(join(second, ".opencode-sandbox/Dockerfile"), dockerfile("RUN echo edited > /etc/edited"));
      expect((await client.run("ses_df_b", { command: "cat /etc/edited", cwd: second, timeoutMs: 120_000 })).stdout).toBe("edited\n");
      expect(await built()).toHaveLength(2);
      // Not an image of its own: a Dockerfile is read from a session's repository.
      await expect(client.images.pull(choice)).rejects.toThrow(/built from a session's repository at that session's first command/);
    } finally {
      for (const id of ["ses_df_a", "ses_df_b"]) await client.sessions.delete(id).catch(() => undefined); // absent when the test failed early
      rmSync(first, { recursive: true, force: true });
      rmSync(second, { recursive: true, force: true });
    }
  }, 300_000);

  test("kill -9 during a Dockerfile build → the next start removes the build's VM, its partial image and its tools directory; the next command builds again", async () => {
    const dir = makeTempDir("ss-gvisor-dockerfile-crash-");
    mkdirSync(join(dir, ".opencode-sandbox"));
    const dockerfilePath = join(dir, ".opencode-sandbox/Dockerfile");
    writeFileSync(dockerfilePath, [`FROM ${registry.address}/team/base:1`, "RUN sleep 600"].join("\n"));
    const buildVms = async () => (await driver().list({})).filter((vm) => vm.name.startsWith("build-")).map((vm) => vm.name);
    const toolsDirs = () => readdirSync("/tmp").filter((name) => name.startsWith(`ss-build-tools-${manager.proc.pid}-`));
    try {
      await client.sessions.register({ id: "ses_df_crash", directory: dir });
      await client.sandbox.set("ses_df_crash", { image: { kind: "dockerfile", path: ".opencode-sandbox/Dockerfile" }, network: { mode: "allowlist", allow: ["loopback"] } });
      const hung = client.run("ses_df_crash", { command: "true", cwd: dir, timeoutMs: 600_000 }).catch((error: Error) => error);
      await eventually(async () => (await buildVms()).length === 1, 60_000);
      const tools = toolsDirs();
      expect(tools).toHaveLength(1);
      await manager.kill9();
      expect(await hung).toBeInstanceOf(Error);
      expect(await buildVms()).toHaveLength(1); // the build VM outlived its manager
      await start();
      expect(await buildVms()).toEqual([]);
      expect(existsSync(join("/tmp", tools[0]!))).toBe(false);
      expect(readdirSync(join(dataDir, "images")).filter((entry) => entry.endsWith(".partial"))).toEqual([]);
      // Nor the build's egress proxy directory (its proxy died with the manager).
      expect(readdirSync(join(`${dataDir}-runtime`, "egress")).filter((entry) => entry.startsWith("build-"))).toEqual([]);
      writeFileSync(dockerfilePath, [`FROM ${registry.address}/team/base:1`, "RUN echo after-the-crash > /etc/after"].join("\n"));
      expect((await client.run("ses_df_crash", { command: "cat /etc/after", cwd: dir, timeoutMs: 120_000 })).stdout).toBe("after-the-crash\n");
      expect(await buildVms()).toEqual([]);
    } finally {
      await client.sessions.delete("ses_df_crash").catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);

  test("delete → no VM, volume, mount or runsc process is left", async () => {
    const vmName = (await client.sandbox.get("ses_gvisor")).vmName;
    await client.sessions.delete("ses_gvisor");
    await manager.stop(); // a graceful stop waits for the removal under way
    const gvisor = driver();
    expect(await gvisor.list({})).toEqual([]);
    expect(await gvisor.listVolumes!()).not.toContain(vmName);
    expect(readFileSync("/proc/self/mountinfo", "utf8")).not.toContain(vmName);
    const runsc = Bun.spawnSync(["ps", "-eo", "args="]).stdout.toString().split("\n").filter((line) => line.includes("runsc") && line.includes(dataDir));
    expect(runsc).toEqual([]);
    const layout = detectCgroupLayout();
    const vmCgroups = (layout ? cgroupDirs(layout, `/${cgroupParent}`) : []).flatMap((dir) => (existsSync(dir) ? readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => `${dir}/${e.name}`) : []));
    expect(vmCgroups).toEqual([]);
  });
});
