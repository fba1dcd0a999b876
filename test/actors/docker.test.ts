// Docker on the microvm tier, through the manager and the real MsbDriver as far as this host allows: msb
// cannot boot a microVM here (kvm_pvm), so the msb is the stand-in (a FAKE, test/runtime-msb/stand-in-msb.ts)
// whose guests are real local-runtime VMs; and no Docker Engine runs in those (the container tier refuses
// mounts and nested namespaces by design), so the daemon is a FAKE `dockerd` and `docker` pair written into
// the guest (below). Everything else is real: the route, the helper the manager installs and runs through the
// exec path, its lock, its supervisor, its log, and the removal when docker is switched off.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { DockerUnavailableError } from "../../sdk/index";
import { makeTempDir, makeTestApp, type TestApp } from "../helpers";
import { makeStandInMsb, type StandInMsb } from "../runtime-msb/stand-in-harness";
import { eventually } from "./fixture";

/** FAKE dockerd: records each start, answers through its pid file, leaves a file in its data root, stops on TERM. */
const FAKE_DOCKERD = `#!/bin/sh
root=; while [ $# -gt 0 ]; do [ "$1" = --data-root ] && root=$2; shift; done
mkdir -p /tmp/fake-docker "$root"
echo started >> /tmp/fake-docker/starts
: > "$root/layer"
echo $$ > /tmp/fake-docker/pid
echo "fake dockerd listening"
trap 'rm -f /tmp/fake-docker/pid; exit 0' TERM
while :; do sleep 1; done`;

/** FAKE docker CLI: `version` shows a server while the fake daemon lives. */
const FAKE_DOCKER = `#!/bin/sh
[ -f /tmp/fake-docker/pid ] && kill -0 "$(cat /tmp/fake-docker/pid)" 2>/dev/null || { echo "Cannot connect to the Docker daemon" >&2; exit 1; }
echo 99.0.0-fake`;

/** How many of the daemon's processes (dockerd, the helper's supervisor) run in the VM. */
const DAEMON_PROCESSES = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c -e '[d]ockerd --data-root' -e ' [s]upervise *$' || true";

let msb: StandInMsb;
let app: TestApp;
let repo: string;

const sh = async (command: string) => {
  const result = await app.client.run("ses_docker", { command, cwd: repo });
  return { exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr };
};

beforeAll(async () => {
  msb = await makeStandInMsb();
  repo = makeTempDir("ss-docker-repo-");
  mkdirSync(join(repo, ".git"));
  app = makeTestApp({ msb: { binary: msb.binary, msbHome: msb.msbHome } });
  await app.client.sessions.register({ id: "ses_docker", directory: repo });
}, 600_000);

afterAll(async () => {
  await app.client.sessions.delete("ses_docker").catch(() => undefined);
  await eventually(() => app.supervisor.list().length === 0, 60_000).catch(() => undefined);
  app.cleanup();
  rmSync(repo, { recursive: true, force: true });
  msb.cleanUp();
}, 120_000);

describe("docker on the microvm tier (stand-in msb, fake daemon)", () => {
  test("on → start installs the helper and says why when the image has no dockerd; with one: one daemon however many start it, restarted when it dies, gone with its data when docker is off (the session's, then the settings' default)", async () => {
    expect((await app.client.sandbox.set("ses_docker", { docker: true })).docker).toEqual({ override: true, effective: true });

    // The built-in image has no Docker Engine: the helper says so, with the fix.
    const missing = (await app.client.docker.start("ses_docker").catch((e) => e)) as DockerUnavailableError;
    expect(missing).toBeInstanceOf(DockerUnavailableError);
    expect(missing.status).toBe(409);
    expect(missing.message).toBe("the session's VM could not start Docker: sandbox-docker: this VM's image has no dockerd: give the session an image with Docker Engine (Debian's docker.io, containerd, runc, iptables and docker-compose)");
    // The manager's own command is in the history, labelled.
    expect((await app.client.execs.list("ses_docker")).execs.some((exec) => exec.command === "(docker: start)")).toBe(true);

    // The FAKE daemon and CLI, in ~/.local/bin: on the helper's PATH (static Docker binaries unpacked in the
    // home volume count), and where the helper itself went (the stand-in's guest root is read-only).
    const bin = "/home/agent/.local/bin";
    const put = await sh(`mkdir -p ${bin} && printf '%s\\n' '${FAKE_DOCKERD.replaceAll("'", "'\\''")}' > ${bin}/dockerd && printf '%s\\n' '${FAKE_DOCKER.replaceAll("'", "'\\''")}' > ${bin}/docker && chmod 755 ${bin}/dockerd ${bin}/docker && ls ${bin}`);
    expect(put.stdout.split("\n").filter(Boolean).sort()).toEqual(["docker", "dockerd", "sandbox-docker"]);
    const withPath = (command: string) => sh(`PATH=${bin}:$PATH; ${command}`);

    // Three starts at once (two through the API, one by the guest) → one daemon.
    const [a, b, guest] = await Promise.all([app.client.docker.start("ses_docker"), app.client.docker.start("ses_docker"), withPath("sandbox-docker start")]);
    expect(a).toEqual({ version: "99.0.0-fake" });
    expect(b).toEqual({ version: "99.0.0-fake" });
    expect(guest).toMatchObject({ exitCode: 0, stdout: "docker 99.0.0-fake ready\n" });
    expect((await sh("cat /tmp/fake-docker/starts")).stdout).toBe("started\n");
    expect((await sh("ls /home/agent/.local/share/docker")).stdout).toBe("layer\n");

    // The daemon dies → its supervisor starts it again, and the log says so.
    await sh("kill $(cat /tmp/fake-docker/pid)");
    await eventually(async () => (await sh("cat /tmp/fake-docker/starts")).stdout === "started\nstarted\n", 30_000);
    expect((await withPath("sandbox-docker status")).stdout).toBe("docker 99.0.0-fake ready\n");
    const log = (await withPath("sandbox-docker log")).stdout;
    expect(log).toContain("sandbox-docker: starting dockerd, data in /home/agent/.local/share/docker");
    expect(log).toContain("restart 1 of 5");

    // The daemon and its supervisor: one of each.
    expect((await sh(DAEMON_PROCESSES)).stdout.trim()).toBe("2");

    // Off → the daemon stops and its data goes, in the background.
    expect((await app.client.sandbox.set("ses_docker", { docker: false })).docker.effective).toBe(false);
    await eventually(async () => (await sh("[ ! -e /home/agent/.local/share/docker ] || echo data left; ls /tmp/fake-docker")).stdout === "starts\n", 60_000);
    expect((await withPath("sandbox-docker status")).exitCode).toBe(3);
    expect((await sh(DAEMON_PROCESSES)).stdout.trim()).toBe("0");

    // On by the settings' default (the session follows it again), then the default off → gone as well.
    await app.client.sandbox.set("ses_docker", { docker: null });
    expect((await app.client.settings.patch({ docker: true })).docker).toBe(true);
    expect(await app.client.docker.start("ses_docker")).toEqual({ version: "99.0.0-fake" });
    expect((await sh("ls /home/agent/.local/share/docker")).stdout).toBe("layer\n");
    await app.client.settings.patch({ docker: false });
    await eventually(async () => (await sh(`[ ! -e /home/agent/.local/share/docker ] || echo data left; ${DAEMON_PROCESSES}`)).stdout === "0\n", 60_000);
  }, 240_000);
});
