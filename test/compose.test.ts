// docker-compose.sandbox.yml and its Dockerfile, validated without a Docker engine (none runs here):
// the Compose client's own `config` must accept the overlay, alone and over a base file; the resolved
// service must have the devices, capability, volumes and SANDBOX_* settings; the Dockerfile is checked
// statically against the scripts it mirrors. Nothing is built or started.
import { beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeTempDir } from "./helpers";

const ROOT = join(import.meta.dir, "..");
const OVERLAY = join(ROOT, "docker-compose.sandbox.yml");

type Service = {
  build: { context: string; dockerfile: string; args?: Record<string, string> };
  devices: (string | { source: string; target: string })[];
  cap_add: string[];
  privileged?: boolean;
  environment: Record<string, string>;
  ports: (string | { host_ip?: string; target: number; published: string | number })[];
  volumes: (string | { type: string; source: string; target: string })[];
  healthcheck: { test: string[] };
};
type Resolved = { services: Record<string, Service>; volumes: Record<string, unknown> };

let compose: string[];
beforeAll(async () => {
  // `docker compose` (v2 plugin) if present, else Debian's docker-compose (installed by the script if missing).
  const proc = Bun.spawn(["bash", join(ROOT, "scripts/install-compose.sh")], { stdout: "pipe", stderr: "inherit" });
  const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  if (code !== 0) throw new Error(`scripts/install-compose.sh failed with exit ${code}`);
  compose = out.trim().split("\n").at(-1)!.split(" ");
}, 300_000);

async function config(files: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const args = [...compose, ...files.flatMap((file) => ["-f", file]), "config"];
  // No DOCKER_HOST: `config` must not need an engine. The project name is fixed so output is stable.
  const proc = Bun.spawn(args, { cwd: ROOT, env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/root", COMPOSE_PROJECT_NAME: "sandbox", ...env }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

async function resolved(files: string[], env: Record<string, string> = {}): Promise<Resolved> {
  const result = await config(files, env);
  if (result.code !== 0) throw new Error(`${compose.join(" ")} config failed (${result.code}):\n${result.stderr}`);
  return Bun.YAML.parse(result.stdout) as Resolved;
}

const volumeTargets = (service: Service) => service.volumes.map((v) => (typeof v === "string" ? v.split(":").slice(0, 2).join(":") : `${v.source}:${v.target}`));

/** Every variable of the configuration table in docs/configuration.md (its first column, row by row). */
function documentedVariables(): string[] {
  const doc = readFileSync(join(ROOT, "docs/configuration.md"), "utf8");
  const lines = doc.split("\n");
  const header = lines.findIndex((line) => line.startsWith("| variable |"));
  expect(header).toBeGreaterThanOrEqual(0);
  const end = lines.findIndex((line, i) => i > header && !line.startsWith("|"));
  const names = lines.slice(header + 2, end < 0 ? undefined : end).flatMap((row) => [...row.split("|")[1]!.matchAll(/`((?:SANDBOX|MSB)_[A-Z_]+)`/g)].map((m) => m[1]!));
  expect(names.length).toBeGreaterThan(20);
  return [...new Set(names)];
}

describe("docker-compose.sandbox.yml", () => {
  test("`config` accepts the overlay alone", async () => {
    const result = await config([OVERLAY]);
    expect(result.stderr).not.toContain("ERROR");
    expect(result.code).toBe(0);
  });

  test("the manager service → /dev/kvm and /dev/net/tun, NET_ADMIN, not privileged, loopback-only port", async () => {
    const service = (await resolved([OVERLAY])).services["sandbox-manager"]!;
    // v1 prints devices as "src:dst" strings, v2 as objects.
    expect(service.devices.map((d) => (typeof d === "string" ? d.split(":")[0] : d.source))).toEqual(["/dev/kvm", "/dev/net/tun"]);
    expect(service.cap_add).toEqual(["NET_ADMIN"]);
    expect(service.privileged ?? false).toBe(false);
    const port = service.ports[0]!;
    // v1 prints "127.0.0.1:7878:7878/tcp", v2 an object with host_ip.
    expect(typeof port === "string" ? port.startsWith("127.0.0.1:7878:7878") : port.host_ip === "127.0.0.1" && port.target === 7878).toBe(true);
    expect(service.build.dockerfile).toBe("Dockerfile");
    expect(service.healthcheck.test.join(" ")).toContain("/api/health");
  });

  test("persistent volumes hold the data dir and the runtime's store (SANDBOX_RUNTIME_DIR, MSB_HOME)", async () => {
    const file = await resolved([OVERLAY]);
    const service = file.services["sandbox-manager"]!;
    const env = service.environment;
    expect(Object.keys(file.volumes).toSorted()).toEqual(["sandbox-data", "sandbox-runtime"]);
    expect(volumeTargets(service)).toEqual(expect.arrayContaining([`sandbox-data:${env.SANDBOX_DATA_DIR}`, `sandbox-runtime:${env.SANDBOX_RUNTIME_DIR}`]));
    expect(env.MSB_HOME).toBe(`${env.SANDBOX_RUNTIME_DIR}/msb`);
  });

  test("every SANDBOX_* setting of the configuration table (docs/configuration.md) is passed through; values come from the caller's environment", async () => {
    const env = (await resolved([OVERLAY])).services["sandbox-manager"]!.environment;
    expect(Object.keys(env)).toEqual(expect.arrayContaining(documentedVariables()));
    expect(env).toMatchObject({ SANDBOX_RUNTIME: "msb", SANDBOX_HOST: "0.0.0.0", SANDBOX_PORT: "7878", SANDBOX_CPUS: "" });
    const custom = (await resolved([OVERLAY], { SANDBOX_CPUS: "4", SANDBOX_MEMORY: "8G", SANDBOX_WORKSPACE: "/home/dev/src", SANDBOX_PUBLISH_PORT: "9000" })).services["sandbox-manager"]!;
    expect(custom.environment).toMatchObject({ SANDBOX_CPUS: "4", SANDBOX_MEMORY: "8G" });
    expect(volumeTargets(custom)).toContain("/home/dev/src:/home/dev/src");
    expect(JSON.stringify(custom.ports)).toContain("9000");
  });

  test("as an overlay over a base file → both services, the base untouched", async () => {
    const dir = makeTempDir("ss-compose-");
    try {
      const base = join(dir, "docker-compose.yml");
      writeFileSync(base, "services:\n  opencode:\n    image: example/opencode:latest\n    environment:\n      SANDBOX_URL: http://sandbox-manager:7878\n");
      const file = await resolved([base, OVERLAY]);
      expect(Object.keys(file.services).toSorted()).toEqual(["opencode", "sandbox-manager"]);
      expect(file.services.opencode!.environment).toEqual({ SANDBOX_URL: "http://sandbox-manager:7878" });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("Dockerfile", () => {
  const dockerfile = readFileSync(join(ROOT, "Dockerfile"), "utf8");

  test("Debian bookworm, Bun from npm at the version scripts/setup.sh pins, the locked install", () => {
    const pinned = /^BUN_VERSION="([^"]+)"/m.exec(readFileSync(join(ROOT, "scripts/setup.sh"), "utf8"))![1];
    expect(dockerfile).toContain("ARG DEBIAN_IMAGE=debian:bookworm-slim");
    expect(dockerfile).toContain(`ARG BUN_VERSION=${pinned}`);
    expect(dockerfile).toContain('npm install --global --no-fund --no-audit "bun@${BUN_VERSION}"');
    expect(dockerfile).toContain("RUN bun install --frozen-lockfile");
    expect(dockerfile).not.toMatch(/privileged/i);
  });

  test("the guest rootfs stage installs build-rootfs.sh's package list, and ENV matches the overlay", async () => {
    const packages = Bun.spawnSync(["bash", join(ROOT, "scripts/build-rootfs.sh"), "--print-packages"]).stdout.toString().trim().split(" ");
    expect(packages).toEqual(expect.arrayContaining(["bash", "coreutils", "git", "procps", "socat"]));
    expect(dockerfile).toContain('packages="$(bash /tmp/build-rootfs.sh --print-packages)"');
    const env = (await resolved([OVERLAY])).services["sandbox-manager"]!.environment;
    for (const key of ["SANDBOX_DATA_DIR", "SANDBOX_RUNTIME_DIR", "MSB_HOME", "SANDBOX_ROOTFS_DIR"]) expect(dockerfile).toContain(`${key}=${env[key]}`);
    // Every directory the image copies exists, so a build would not stop at a COPY.
    for (const match of dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)) {
      for (const source of match[1]!.split(" ")) expect(Bun.spawnSync(["test", "-e", join(ROOT, source)]).exitCode).toBe(0);
    }
  });
});
