// Test helpers for the event stream: a raw SSE reader (fetch + eventsource-parser, independent of the SDK)
// that keeps every frame and the raw text, and a loopback TCP proxy whose connections a test can cut.
import { createParser } from "eventsource-parser";
import { connect, createServer, type Socket } from "node:net";
import type { SandboxEvent } from "../../sdk/index";

export type Frame = { id: string | undefined; event: string | undefined; data: SandboxEvent };

/** An open GET /api/events: frames as they come, the raw text, and close(). */
export async function openEventStream(url: string, token: string, headers: Record<string, string> = {}, query = "") {
  const abort = new AbortController();
  const response = await fetch(`${url}/api/events${query}`, { headers: { authorization: `Bearer ${token}`, ...headers }, signal: abort.signal });
  const frames: Frame[] = [];
  let raw = "";
  const parser = createParser({ onEvent: (message) => frames.push({ id: message.id, event: message.event, data: JSON.parse(message.data) as SandboxEvent }) });
  const reading = (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body!) {
        const text = decoder.decode(chunk, { stream: true });
        raw += text;
        parser.feed(text);
      }
    } catch {
      // closed by close()
    }
  })();
  return {
    response,
    frames,
    raw: () => raw,
    async close() {
      abort.abort();
      await reading;
    },
  };
}

/** A TCP proxy on 127.0.0.1:0 to `target`: cut() drops every connection; hold() parks new ones until release(). */
export async function cuttableProxy(target: URL) {
  const sockets = new Set<Socket>();
  let held = Promise.resolve();
  let release = () => {};
  let parked = 0;
  const server = createServer((client) => {
    sockets.add(client);
    client.on("error", () => client.destroy());
    parked += 1;
    void held.then(() => {
      parked -= 1;
      const upstream = connect(Number(target.port), target.hostname);
      sockets.add(upstream);
      const both = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
      };
      upstream.on("error", both).on("close", both);
      client.on("close", both);
      client.pipe(upstream);
      upstream.pipe(client);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    parked: () => parked,
    cut: () => {
      for (const socket of sockets) socket.destroy();
      sockets.clear();
    },
    hold: () => {
      held = new Promise((resolve) => (release = resolve));
    },
    release: () => release(),
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
