// The operator's private CA (SANDBOX_EXTRA_CA_FILE) inside real VMs: behind a TLS-inspecting proxy or with a
// private registry, the upstreams a guest tunnels to itself are signed by it, so every VM trusts it beside
// the manager CA. A TLS server on the host's loopback with a certificate that CA signed is reached through
// the guest's proxy as an opaque CONNECT tunnel; curl, python3 and node verify it with no flag, and a
// certificate no trusted CA signed is still refused.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { GUEST_CA_BUNDLE, GUEST_MANAGER_CA, GUEST_SYSTEM_CA_BUNDLE } from "../../runtime/driver";
import { makeActorFixture, type ActorFixture } from "../actors/fixture";
import { makeTestPki, type ServerCertificate, type TestPki } from "../fixtures/test-pki";
import { GUEST_HOST_ALIAS, nodeGet, serveTlsOnLoopback } from "./guest-tls";

let f: ActorFixture;
let pki: TestPki;
let repo: string;
const servers: ReturnType<typeof Bun.serve>[] = [];

const tlsServer = (certificate: ServerCertificate, body: string) => serveTlsOnLoopback(servers, certificate, () => new Response(body));

beforeAll(async () => {
  pki = makeTestPki("session-sandbox test private CA");
  f = await makeActorFixture({ guestExtraCas: [pki.caPem] });
  repo = f.makeRepo("extra-ca");
  await f.client.sessions.register({ id: "ses_extra_ca", directory: repo });
}, 600_000);
afterAll(async () => {
  for (const server of servers) server.stop(true);
  await f?.teardown();
  pki?.cleanup();
}, 120_000);

const run = (command: string) => f.client.run("ses_extra_ca", { command, cwd: repo, timeoutMs: 60_000 });

describe("the operator's private CA inside a VM", () => {
  test("the bundle holds the manager CA, then the private CA, then the image's roots; Node's file the two CAs", async () => {
    const result = await run(`cmp ${GUEST_CA_BUNDLE} ${GUEST_SYSTEM_CA_BUNDLE} && echo same; cat ${GUEST_MANAGER_CA}; echo "=== bundle"; cat ${GUEST_CA_BUNDLE}`);
    expect(result.exitCode).toBe(0);
    const [head, bundle] = result.stdout.split("=== bundle\n") as [string, string];
    const own = `${f.ca.certPem()}${pki.caPem}`;
    expect(head).toBe(`same\n${own}`);
    expect(bundle).toBe(`${own}\n${readFileSync(join(f.image, GUEST_SYSTEM_CA_BUNDLE), "utf8")}\n`);
  }, 120_000);

  test("curl, python3 urllib and node https trust a server the private CA signed, through the proxy's opaque tunnel; a self-signed one is still refused", async () => {
    const port = tlsServer(pki.issue(GUEST_HOST_ALIAS), "signed by the private CA");
    const untrusted = tlsServer(pki.selfSigned(GUEST_HOST_ALIAS), "nobody vouches");
    await f.client.sandbox.set("ses_extra_ca", { network: { mode: "allowlist", allow: [`${GUEST_HOST_ALIAS}:${port}`, `${GUEST_HOST_ALIAS}:${untrusted}`] } });
    const url = `https://${GUEST_HOST_ALIAS}:${port}/`;
    expect(await run(`curl -sS --max-time 20 ${url}`)).toMatchObject({ exitCode: 0, stdout: "signed by the private CA", stderr: "" });
    const python = await run(`python3 -c 'import urllib.request; print(urllib.request.urlopen("${url}", timeout=20).read().decode())'`);
    expect(python).toMatchObject({ exitCode: 0, stdout: "signed by the private CA\n", stderr: "" });
    expect(await run(nodeGet(port))).toMatchObject({ exitCode: 0, stdout: "signed by the private CA", stderr: "" });
    const refused = await run(`curl -sS --max-time 20 https://${GUEST_HOST_ALIAS}:${untrusted}/; echo "exit=$?"`);
    expect(refused.stdout).toBe("exit=60\n"); // 60: the peer's certificate cannot be verified
  }, 180_000);
});
