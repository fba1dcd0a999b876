// Reaching the target: lookup with a deadline, then TCP to the already-checked addresses, never the name.
import { lookup } from "node:dns/promises";
import { connect, type Socket } from "node:net";

export type Resolver = (host: string) => Promise<string[]>;

/** Thrown when the target cannot be reached; `status` is 502 (refused, unknown name) or 504 (timed out). */
export class UpstreamError extends Error {
  constructor(
    readonly status: 502 | 504,
    message: string,
  ) {
    super(message);
  }
}

/** getaddrinfo, so /etc/hosts applies as it would for any host program. */
export const systemResolver: Resolver = async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

export async function resolveTarget(resolve: Resolver, host: string, timeoutMs: number): Promise<string[]> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new UpstreamError(504, `looking up ${host} took longer than ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    const addresses = await Promise.race([resolve(host), deadline]);
    if (addresses.length === 0) throw new UpstreamError(502, `${host} has no address`);
    return addresses;
  } catch (error) {
    if (error instanceof UpstreamError) throw error;
    const code = (error as { code?: string }).code ?? (error as Error).message;
    throw new UpstreamError(502, `cannot resolve ${host}: ${code}`);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Resolves with `socket` once it emits `ready` (`connect`, or TLS's `secureConnect`). Its first error, or
 * `timeoutMs` without either, rejects with an UpstreamError worded by `says` (502 and 504), after `destroy`.
 */
export function whenReady<S extends Socket>(
  socket: S,
  ready: "connect" | "secureConnect",
  timeoutMs: number,
  says: { timedOut: string; failed: (error: Error & { code?: string }) => string },
  destroy: () => void = () => socket.destroy(),
): Promise<S> {
  const { promise, resolve, reject } = Promise.withResolvers<S>();
  const fail = (error: UpstreamError) => {
    clearTimeout(timer);
    destroy();
    reject(error);
  };
  const timer = setTimeout(() => fail(new UpstreamError(504, says.timedOut)), timeoutMs);
  const onError = (error: Error) => fail(new UpstreamError(502, says.failed(error)));
  socket.once("error", onError);
  socket.once(ready, () => {
    clearTimeout(timer);
    socket.off("error", onError);
    resolve(socket);
  });
  return promise;
}

function connectOne(address: string, port: number, timeoutMs: number): Promise<Socket> {
  return whenReady(connect({ host: address, port, allowHalfOpen: true }), "connect", timeoutMs, {
    timedOut: `connecting to ${address} port ${port} timed out after ${timeoutMs} ms`,
    failed: (error) => `cannot connect to ${address} port ${port}: ${error.code ?? error.message}`,
  });
}

/** Tries each address in turn (at most `maxTries`); the last failure is the one reported. */
export async function connectFirst(addresses: readonly string[], port: number, timeoutMs: number, maxTries: number): Promise<{ socket: Socket; address: string }> {
  let last: UpstreamError = new UpstreamError(502, "no address to connect to");
  for (const address of addresses.slice(0, maxTries)) {
    try {
      return { socket: await connectOne(address, port, timeoutMs), address };
    } catch (error) {
      last = error as UpstreamError;
    }
  }
  throw last;
}
