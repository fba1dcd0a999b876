// The VM relay (runtime/local/vm-relay.c), run on the host against loopback servers of the test's own: the
// egress forwarder's `listen` joins each TCP connection to the Unix socket, the port relay's `connect` joins
// stdin and stdout to a TCP connection, each direction ends on its own (a client that half-closes still gets
// its answer), and its exit codes say what went wrong. That every VM gets it and an image without socat
// reaches out through it: test/images/oci-images.test.ts (container tier), test/actors/gvisor-manager.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Socket } from "bun";
import { ensureVmRelay } from "../../runtime/local/vm-relay-binary";
import { makeTempDir } from "../helpers";

let dir: string;
let relay: string;

beforeAll(() => {
  dir = makeTempDir("ss-vm-relay-");
  const built = ensureVmRelay(dir);
  if (built.path === undefined) throw new Error(built.problem);
  relay = built.path;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A server that reads everything until the peer half-closes, then answers with what it got and closes. */
function answerAfterEnd(prefix: string) {
  const received = new Map<Socket<unknown>, string>();
  return {
    data: (socket: Socket<unknown>, data: Buffer) => void received.set(socket, (received.get(socket) ?? "") + data.toString()),
    end: (socket: Socket<unknown>) => {
      socket.end(`${prefix}${received.get(socket) ?? ""}`);
    },
  };
}

async function freeLoopbackPort(): Promise<number> {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}

describe("vm-relay", () => {
  test("built once per source version, named by its hash, executable by the VMs' uids (that it runs in an image without libc: the busybox images of the tests named above)", () => {
    expect(statSync(relay).mode & 0o777).toBe(0o755);
    expect(relay).toMatch(/vm-relay-[0-9a-f]{12}$/);
    expect(ensureVmRelay(dir).path).toBe(relay);
  });

  test("listen → each TCP connection on 127.0.0.1 reaches the Unix socket; an answer sent after the client's end arrives", async () => {
    const socketPath = join(dir, "proxy.sock");
    const upstream = Bun.listen({ unix: socketPath, socket: { ...answerAfterEnd("unix got: "), open() {} } });
    const port = await freeLoopbackPort();
    const forwarder = Bun.spawn([relay, "listen", String(port), socketPath], { stdout: "ignore", stderr: "pipe" });
    try {
      const exchange = async (text: string) => {
        for (let attempt = 0; ; attempt++) {
          try {
            let answer = "";
            const { promise, resolve } = Promise.withResolvers<string>();
            const client = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data: (_s, data) => void (answer += data.toString()), close: () => resolve(answer), error: () => resolve(answer) } });
            client.write(text);
            client.shutdown();
            return await promise;
          } catch (error) {
            if (attempt > 100) throw error; // the forwarder is not listening yet: it was just spawned
            await Bun.sleep(20);
          }
        }
      };
      // Two at once: one process per connection.
      expect(await Promise.all([exchange("first"), exchange("second")])).toEqual(["unix got: first", "unix got: second"]);
    } finally {
      forwarder.kill();
      await forwarder.exited;
      upstream.stop(true);
    }
  });

  test("connect → stdin reaches the TCP server, its answer reaches stdout, exit 0 once both ended (IPv4 and IPv6)", async () => {
    for (const hostname of ["127.0.0.1", "::1"]) {
      const server = Bun.listen({ hostname, port: 0, socket: { ...answerAfterEnd("tcp got: "), open() {} } });
      try {
        const proc = Bun.spawn([relay, "connect", hostname, String(server.port)], { stdin: new Blob(["from stdin"]), stdout: "pipe", stderr: "pipe" });
        expect(await new Response(proc.stdout).text()).toBe("tcp got: from stdin");
        expect(await proc.exited).toBe(0);
      } finally {
        server.stop(true);
      }
    }
  });

  test("connect to a port where nothing listens → exit 1 with the reason; bad arguments → exit 2 with the usage", async () => {
    const port = await freeLoopbackPort();
    const refused = Bun.spawn([relay, "connect", "127.0.0.1", String(port)], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    expect(await refused.exited).toBe(1);
    expect(await new Response(refused.stderr).text()).toContain(`cannot connect to 127.0.0.1 port ${port}: Connection refused`);
    for (const args of [["connect", "localhost", "80"], ["connect", "127.0.0.1", "70000"], ["listen", "0", "/x"], ["serve"]]) {
      const bad = Bun.spawn([relay, ...args], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
      expect(await bad.exited).toBe(2);
      expect(await new Response(bad.stderr).text()).toMatch(/usage: vm-relay|not an IP address/);
    }
  });
});
