// The manager's event stream (GET /api/events, server-sent events) as an async iterator.
import type { SandboxEvent } from "../app/events/event-bus";
import { ManagerUnreachableError, toSdkError } from "./errors";

export type { SandboxEvent } from "../app/events/event-bus";

/** Yields events until `signal` aborts or the manager goes away (then it throws ManagerUnreachableError). */
export async function* eventStream(base: { url: string; token: string; fetcher?: typeof fetch }, signal?: AbortSignal): AsyncGenerator<SandboxEvent> {
  let response: Response;
  try {
    response = await (base.fetcher ?? fetch)(`${base.url}/api/events`, { headers: { authorization: `Bearer ${base.token}`, accept: "text/event-stream" }, signal });
  } catch (error) {
    if (signal?.aborted) return;
    throw new ManagerUnreachableError(0, "MANAGER_UNREACHABLE", `cannot reach the manager at ${base.url}: ${(error as Error).message}`);
  }
  if (!response.ok || !response.body) throw toSdkError(response.status, await response.json().catch(() => response.statusText));
  const decoder = new TextDecoder();
  let buffered = "";
  try {
    for await (const chunk of response.body) {
      buffered += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffered.indexOf("\n\n")) >= 0) {
        const block = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        const data = block
          .split("\n")
          .filter((line) => line.startsWith("data: "))
          .map((line) => line.slice(6))
          .join("\n");
        if (data) yield JSON.parse(data) as SandboxEvent;
      }
    }
  } catch (error) {
    if (signal?.aborted) return;
    throw new ManagerUnreachableError(0, "MANAGER_UNREACHABLE", `the event stream from ${base.url} broke: ${(error as Error).message}`);
  }
  if (!signal?.aborted) throw new ManagerUnreachableError(0, "MANAGER_UNREACHABLE", `the event stream from ${base.url} ended`);
}
