// Docker in a session's VM on the gVisor tier, end to end: the real manager (SANDBOX_RUNTIME=gvisor) boots
// a docker VM from the Docker guest image (scripts/build-docker-rootfs.sh), the route starts the image's own
// dockerd through the guest helper, and real docker commands run in the VM: a build FROM scratch, a run, a
// compose project of two services that find each other by name, pulls from a registry on the host's loopback
// through the session's egress policy (allowed, then refused), the data root's bound, what the daemon's
// privileges do not reach, and docker switched off.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cgroupDirs, detectCgroupLayout } from "../../runtime/local/cgroup-layout";
import { createClient } from "../../sdk/index";
import { startRegistry, type Registry } from "../fixtures/oci-registry";
import { makeTempDir } from "../helpers";
import { startManager, type ManagerProcess } from "../manager-process";
import { prepareLocalRuntime } from "../runtime/local-target";
import { removeGvisorManagerState } from "../runtime/gvisor-target";

const SESSION = "ses_docker";
/** The disk quota of the test: the daemon's data root is bounded by it. */
const DISK_MIB = 256;
const cgroupParent = `ss-gvisor-docker-${randomBytes(3).toString("hex")}`;

let image: string;
let dataDir: string;
let repo: string;
let manager: ManagerProcess;
let client: ReturnType<typeof createClient>;
let registry: Registry;
let registryHost: string;

/** The Docker guest image, built (once, cached) by its script, as a fresh machine's CI does. */
function dockerImage(): string {
  const result = Bun.spawnSync(["bash", join(import.meta.dir, "../../scripts/build-docker-rootfs.sh")], { stdout: "pipe", stderr: "inherit" });
  if (result.exitCode !== 0) throw new Error(`scripts/build-docker-rootfs.sh failed with exit ${result.exitCode}`);
  return result.stdout.toString().trim();
}

async function sh(command: string, timeoutMs = 180_000) {
  return client.run(SESSION, { command, cwd: repo, timeoutMs });
}

beforeAll(async () => {
  await prepareLocalRuntime();
  image = dockerImage();
  dataDir = makeTempDir("ss-gvisor-docker-");
  repo = makeTempDir("ss-gvisor-docker-repo-");
  registry = await startRegistry();
  registryHost = `host.sandbox.internal:${registry.address.split(":")[1]}`;
  await registry.push("team/web", "1", "pulled-through-the-proxy");
  manager = await startManager(dataDir, { SANDBOX_RUNTIME: "gvisor", SANDBOX_CGROUP_PARENT: cgroupParent, SANDBOX_ROOTFS_DIR: image });
  client = createClient({ url: manager.url, token: manager.token });
  await client.settings.patch({ diskMib: DISK_MIB });
  await client.sessions.register({ id: SESSION, directory: repo });
  await client.sandbox.set(SESSION, { docker: true, network: { mode: "allowlist", allow: [registryHost] } });
}, 600_000);

afterAll(async () => {
  await registry?.stop();
  if (manager && manager.proc.exitCode === null) await manager.stop();
  if (dataDir) await removeGvisorManagerState(dataDir, image, cgroupParent);
  if (repo) rmSync(repo, { recursive: true, force: true });
}, 120_000);

describe("docker on the gvisor tier (real manager, real dockerd in a gVisor VM)", () => {
  test("docker start → the daemon answers; `docker version` shows a server", async () => {
    // The registry on the host's loopback speaks plain HTTP: the user's daemon settings say so.
    writeFileSync(join(repo, "daemon.json"), JSON.stringify({ "insecure-registries": [registryHost] }));
    expect(await sh(`mkdir -p ~/.docker && cp ${repo}/daemon.json ~/.docker/daemon.json`)).toMatchObject({ exitCode: 0 });
    const started = await client.docker.start(SESSION);
    expect(started.version).toMatch(/^\d+\.\d+\.\d+/);
    const version = await sh("docker version --format '{{.Server.Version}} {{.Server.Os}}'");
    expect(version).toMatchObject({ exitCode: 0, stdout: `${started.version} linux\n` });
    // A second start finds it answering: one daemon.
    expect((await client.docker.start(SESSION)).version).toBe(started.version);
    expect((await sh("pgrep -c -x dockerd")).stdout.trim()).toBe("1");
  }, 600_000);

  test("docker build of a FROM scratch image with the guest's static busybox → docker run --rm prints what its RUN wrote", async () => {
    const build = await sh(
      [
        "mkdir -p /tmp/img && cd /tmp/img && cp /bin/busybox .",
        `printf '%s\\n' 'FROM scratch' 'COPY busybox /bin/busybox' 'RUN ["/bin/busybox", "sh", "-c", "/bin/busybox --install -s /bin && echo built-in-the-vm > /built.txt"]' > Dockerfile`,
        "docker build -q -t local/busybox . >/dev/null",
        "docker run --rm local/busybox cat /built.txt",
      ].join(" && "),
    );
    expect(build).toMatchObject({ exitCode: 0, stdout: "built-in-the-vm\n" });
  }, 300_000);

  test("docker compose up -d of two services → the client's curl reaches the server by its service name; its published port reaches the host through the session's port forward; down removes them", async () => {
    // The client image: the guest's curl with the libraries it loads, on the busybox image.
    const curlImage = await sh(
      [
        "mkdir -p /tmp/curl/root && cd /tmp/curl",
        "for file in /usr/bin/curl $(ldd /usr/bin/curl | grep -o '/[^ ]*'); do mkdir -p root$(dirname $file) && cp -L $file root$file; done",
        "printf '%s\\n' 'FROM local/busybox' 'COPY root/ /' > Dockerfile",
        "docker build -q -t local/curl . >/dev/null",
        "docker run --rm local/curl curl --version | head -c 5",
      ].join(" && "),
    );
    expect(curlImage).toMatchObject({ exitCode: 0, stdout: "curl " });
    const compose = [
      "services:",
      "  web:",
      "    image: local/busybox",
      '    command: ["sh", "-c", "mkdir -p /www && echo hello-from-web > /www/index.html && exec httpd -f -p 8080 -h /www"]',
      '    ports: ["18080:8080"]',
      "  client:",
      "    image: local/curl",
      "    depends_on: [web]",
      '    command: ["sh", "-c", "until curl -fsS http://web:8080/; do sleep 0.5; done; exec sleep 600"]',
    ].join("\n");
    writeFileSync(join(repo, "compose.yaml"), compose);
    const up = await sh(
      [
        "docker compose up -d --quiet-pull >/dev/null 2>&1",
        "for i in $(seq 60); do docker compose logs client | grep -q hello-from-web && break; sleep 0.5; done",
        "docker compose --ansi never logs --no-log-prefix client",
        "docker compose ps --format '{{.Service}} {{.State}}' | sort",
      ].join("; "),
    );
    expect(up.exitCode).toBe(0);
    // compose's log lines begin with an erase-line sequence even without colours.
    expect(up.stdout.replaceAll("\x1b[2K", "")).toBe("hello-from-web\nclient running\nweb running\n");
    // Published on the VM by docker's userland proxy; forwarded to the host like any port the VM listens on.
    const forward = await client.ports.open(SESSION, { port: 18080 });
    expect(await (await fetch(forward.url)).text()).toBe("hello-from-web\n");
    await client.ports.close(SESSION, 18080);
    expect(await sh("docker compose down 2>/dev/null && docker ps -aq | wc -l")).toMatchObject({ exitCode: 0, stdout: "0\n" });
  }, 300_000);

  test("the daemon's data root is bounded by the disk quota: a container that writes past it gets ENOSPC", async () => {
    const df = await sh("df -m /var/lib/docker | tail -n1 | awk '{print $2}'");
    expect(Number(df.stdout.trim())).toBe(DISK_MIB);
    const fill = await sh(`docker run --rm local/busybox dd if=/dev/zero of=/fill bs=1M count=${DISK_MIB + 64} 2>&1`);
    expect(fill.exitCode).not.toBe(0);
    expect(fill.stdout).toContain("No space left on device");
    // The failed container's layer is gone with it: the daemon works on.
    expect(await sh("docker run --rm local/busybox echo still-working")).toMatchObject({ exitCode: 0, stdout: "still-working\n" });
  }, 300_000);

  test("the daemon's privileges stay in gVisor's kernel: no host process, no write to the image, no setuid file or device in the repository, no cgroup on the host, no route to the host", async () => {
    const inside = await sh(
      [
        "echo processes=$(ls /proc | grep -c '^[0-9]')",
        "mount -o remount,rw /usr 2>/dev/null; touch /usr/escape-marker 2>/dev/null && echo wrote-usr || echo usr-read-only",
        "docker run --rm --privileged -v /usr:/hostusr local/busybox sh -c 'touch /hostusr/escape-marker 2>/dev/null && echo wrote || echo read-only'",
        `docker run --rm local/busybox wget -q -T 5 -O - http://${registryHost}/v2/ >/dev/null 2>&1 && echo reached-host || echo no-route`,
        // The guest's root holds CAP_FSETID, CAP_CHOWN and CAP_MKNOD: the repository's owner runs its files.
        `cp /bin/busybox ${repo}/suid-busybox && chown 0:0 ${repo}/suid-busybox 2>/dev/null; chmod 4755 ${repo}/suid-busybox 2>/dev/null; true`,
        `mknod ${repo}/null-device c 1 3 2>/dev/null && echo made-device || echo no-device`,
      ].join("; "),
    );
    expect(inside.exitCode).toBe(0);
    const [processes, usr, privileged, route] = inside.stdout.trim().split("\n");
    const copied = statSync(join(repo, "suid-busybox"));
    expect(copied.mode & 0o6000).toBe(0);
    expect(existsSync(join(repo, "null-device")) && statSync(join(repo, "null-device")).isCharacterDevice()).toBe(false);
    // The VM's own processes: a few dozen (the daemon, containerd, their shims), never the host's hundreds.
    expect(Number(processes!.split("=")[1])).toBeLessThan(100);
    expect(usr).toBe("usr-read-only");
    expect(privileged).toBe("read-only");
    expect(route).toBe("no-route");
    expect(existsSync(join(image, "usr/escape-marker"))).toBe(false);
    // The daemon's cgroups are the Sentry's: the VM's host cgroup has none of them.
    const layout = detectCgroupLayout();
    const hostCgroups = (layout ? cgroupDirs(layout, `/${cgroupParent}`) : []).flatMap((dir) => (existsSync(dir) ? readdirSync(dir, { recursive: true }).map(String) : []));
    expect(hostCgroups.filter((path) => path.includes("docker"))).toEqual([]);
  }, 300_000);

  test("a pull from the registry on the host's loopback → through the session's policy: allowed, then refused", async () => {
    const allowed = await sh(`docker pull -q ${registryHost}/team/web:1 >/dev/null && docker run --rm ${registryHost}/team/web:1 cat /etc/image-marker`);
    expect(allowed).toMatchObject({ exitCode: 0, stdout: "pulled-through-the-proxy\n" });
    // A build's RUN on the VM's network reaches out through the same proxy and policy.
    const fetched = await sh(
      [
        "mkdir -p /tmp/fetch && cd /tmp/fetch",
        `printf '%s\n' 'FROM local/busybox' 'RUN wget -q -O /registry.json http://${registryHost}/v2/' > Dockerfile`,
        "docker build -q --network host --build-arg http_proxy=http://127.0.0.1:3128 -t local/fetched . >/dev/null",
        "docker run --rm local/fetched cat /registry.json",
      ].join(" && "),
    );
    expect(fetched).toMatchObject({ exitCode: 0, stdout: "{}" });
    // A policy that no longer names the registry: the VM is recreated with it; the daemon starts again.
    await client.sandbox.set(SESSION, { network: { mode: "allowlist", allow: ["host.sandbox.internal:1"] } });
    await client.docker.start(SESSION);
    const refused = await sh(`docker pull ${registryHost}/team/web:1 2>&1`);
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stdout).toMatch(/403|Forbidden|not allowed/i);
    expect((await sh(`docker image ls -q ${registryHost}/team/web`)).stdout).toBe("");
  }, 300_000);

  test("docker off → the VM is recreated without it: no daemon, no data root, no capability", async () => {
    await client.sandbox.set(SESSION, { docker: false });
    const after = await sh("pgrep -c -x dockerd; grep -c ' /var/lib/docker ' /proc/mounts; grep CapEff /proc/self/status | awk '{print $2}'");
    expect(after.stdout).toBe("0\n0\n0000000000000000\n");
    expect((await client.sandbox.get(SESSION)).docker).toEqual({ override: false, effective: false });
    await expect(client.docker.start(SESSION)).rejects.toThrow(/docker is off for session ses_docker/);
  }, 300_000);
});
