// The two sockets of one proxied connection (the guest's and the upstream's), ended together.
import type { Socket } from "node:net";

/** `closed` resolves once both sockets have closed; `teardown` destroys both (idempotent). */
export function socketPair(client: Socket, upstream: Socket): { closed: Promise<void>; teardown: () => void } {
  const { promise, resolve } = Promise.withResolvers<void>();
  let closed = 0;
  for (const socket of [client, upstream]) {
    socket.on("close", () => {
      if (++closed === 2) resolve();
    });
  }
  return {
    closed: promise,
    teardown: () => {
      client.destroy();
      upstream.destroy();
    },
  };
}
