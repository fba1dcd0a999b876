// The manager CA inside real VMs (local runtime): the five variables name files holding it, the
// system store holds it beside the image's own roots, and curl, python3 and node in the guest trust a
// leaf it minted — served by a TLS server on the host's loopback, reached through the guest's proxy as an
// opaque CONNECT tunnel (no -k anywhere). A rotation recreates the VM at its next command, trusting the
// new CA and no longer the old one.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { GUEST_CA_BUNDLE, GUEST_MANAGER_CA, GUEST_SYSTEM_CA_BUNDLE, GUEST_TRUST_DIR } from "../../runtime/driver";
import { CA_ENV_NAMES } from "../../runtime/tiers/embedded";
import { makeActorFixture, type ActorFixture } from "../actors/fixture";
import { GUEST_HOST_ALIAS, nodeGet, serveTlsOnLoopback } from "./guest-tls";

const HOST = GUEST_HOST_ALIAS;
let f: ActorFixture;
let repo: string;
const servers: ReturnType<typeof Bun.serve>[] = [];

/** An HTTPS server on the host's loopback with a leaf the manager CA minted for host.sandbox.internal. */
async function leafServer(body: string): Promise<number> {
  // A dumb-protocol ref list for git; the body for everyone else.
  return serveTlsOnLoopback(servers, await f.ca.leafFor(HOST), (request) => new Response(new URL(request.url).pathname.endsWith("/info/refs") ? `${"a".repeat(40)}\trefs/heads/main\n` : body));
}

beforeAll(async () => {
  f = await makeActorFixture();
  repo = f.makeRepo("ca-trust");
  await f.client.sessions.register({ id: "ses_ca", directory: repo });
}, 600_000);
afterAll(async () => {
  for (const server of servers) server.stop(true);
  await f?.teardown();
}, 120_000);

const run = (command: string) => f.client.run("ses_ca", { command, cwd: repo, timeoutMs: 60_000 });
const allow = (ports: number[]) => f.client.sandbox.set("ses_ca", { network: { mode: "allowlist", allow: ports.map((port) => `${HOST}:${port}`) } });

describe("manager CA inside a VM", () => {
  test("the variables name the bundle (the manager CA first, then exactly the image's own roots) and Node's the CA alone; the system store is the bundle", async () => {
    const names = CA_ENV_NAMES.map((name) => `echo "${name}=$${name}"`).join("; ");
    const result = await run(`${names}; cmp ${GUEST_CA_BUNDLE} ${GUEST_SYSTEM_CA_BUNDLE} && echo same; cat ${GUEST_MANAGER_CA}; echo "=== bundle"; cat ${GUEST_CA_BUNDLE}`);
    expect(result.exitCode).toBe(0);
    const [head, bundle] = result.stdout.split("=== bundle\n") as [string, string];
    const lines = head.split("\n");
    expect(lines.slice(0, 5)).toEqual(CA_ENV_NAMES.map((name) => `${name}=${name === "NODE_EXTRA_CA_CERTS" ? GUEST_MANAGER_CA : GUEST_CA_BUNDLE}`));
    expect(lines[5]).toBe("same");
    expect(lines.slice(6).join("\n")).toBe(f.ca.certPem());
    const imageRoots = readFileSync(join(f.image, GUEST_SYSTEM_CA_BUNDLE), "utf8");
    expect(bundle).toBe(`${f.ca.certPem()}\n${imageRoots}\n`);
    expect(imageRoots.split("BEGIN CERTIFICATE").length).toBeGreaterThan(100);
    expect(result.stdout).not.toContain("PRIVATE KEY");
  }, 120_000);

  test("the trust directory is read-only in the guest, even for its root", async () => {
    const result = await run(`touch ${GUEST_TRUST_DIR}/x; echo "exit=$?"; echo x >> ${GUEST_CA_BUNDLE}; echo "exit=$?"; echo x >> ${GUEST_SYSTEM_CA_BUNDLE}; echo "exit=$?"`);
    expect(result.stdout).toBe("exit=1\nexit=2\nexit=2\n"); // touch fails; a failed redirection is 2 in sh
    expect(result.stderr).toContain("Read-only file system");
  }, 120_000);

  test("curl, git, python3 urllib and node https trust a leaf the manager CA minted, through the proxy's opaque tunnel", async () => {
    const port = await leafServer("hello over TLS");
    await allow([port]);
    const url = `https://${HOST}:${port}/`;
    const curl = await run(`curl -sS --max-time 20 ${url}`);
    expect(curl).toMatchObject({ exitCode: 0, stdout: "hello over TLS", stderr: "" });
    const python = await run(`python3 -c 'import urllib.request; print(urllib.request.urlopen("${url}", timeout=20).read().decode())'`);
    expect(python).toMatchObject({ exitCode: 0, stdout: "hello over TLS\n", stderr: "" });
    const node = await run(nodeGet(port));
    expect(node).toMatchObject({ exitCode: 0, stdout: "hello over TLS", stderr: "" });
    const nodeWithout = await run(`env -u NODE_EXTRA_CA_CERTS ${nodeGet(port)}`);
    expect(nodeWithout).toMatchObject({ exitCode: 1, stderr: "UNABLE_TO_VERIFY_LEAF_SIGNATURE\n" });
    const git = await run(`git ls-remote ${url}repo.git`);
    expect(git).toMatchObject({ exitCode: 0, stdout: `${"a".repeat(40)}\trefs/heads/main\n` });
    // Without the variables, the system store (the same bundle over the image's own) is enough.
    const bare = await run(`env ${CA_ENV_NAMES.map((name) => `-u ${name}`).join(" ")} curl -sS --max-time 20 ${url}`);
    expect(bare).toMatchObject({ exitCode: 0, stdout: "hello over TLS" });
    // The check has teeth: curl refuses the leaf against one public root alone.
    const strict = await run(`curl -sS --max-time 20 --cacert /usr/share/ca-certificates/mozilla/ISRG_Root_X1.crt ${url}; echo "exit=$?"`);
    expect(strict.stdout).toContain("exit=60");
  }, 180_000);

  test("rotate → the next command recreates the VM, which trusts the new CA and no longer the old one", async () => {
    // Every port of the host alias, set first: the rotation must be the only change of the VM's spec.
    await f.client.sandbox.set("ses_ca", { network: { mode: "allowlist", allow: [HOST] } });
    const oldPort = await leafServer("old CA");
    expect((await run(`curl -sS --max-time 20 https://${HOST}:${oldPort}/`)).stdout).toBe("old CA");
    const before = await f.driver.inspect((await f.client.sandbox.get("ses_ca")).vmName);
    const rotated = await f.client.ca.rotate();
    expect(rotated.fingerprint).not.toBe(rotated.previousFingerprint);
    const newPort = await leafServer("new CA");
    const result = await run(`curl -sS --max-time 20 https://${HOST}:${newPort}/; echo; curl -sS --max-time 20 https://${HOST}:${oldPort}/; echo "exit=$?"`);
    expect(result.stdout).toBe("new CA\nexit=60\n"); // 60: the peer's certificate cannot be verified
    expect(result.stderr).toContain("unable to get local issuer certificate");
    const after = await f.driver.inspect(before!.name);
    expect({ ...after!.spec, trustDir: "" }).toEqual({ ...before!.spec, trustDir: "" });
    expect(after!.spec.trustDir).not.toBe(before!.spec.trustDir);
    expect(after!.createdAt).toBeGreaterThan(before!.createdAt);
    expect(readFileSync(join(after!.spec.trustDir!, "manager-ca.crt"), "utf8")).toBe(f.ca.certPem());
  }, 180_000);
});
