// The one fetch of the SDK's calls that are not JSON in and out (the exec stream, files, process logs):
// the token added, an unreachable manager and an error status turned into the SDK's typed errors.
import { ManagerUnreachableError, toSdkError } from "./errors";

export type RawBase = { url: string; token: string; fetcher?: typeof fetch };

/** `path` below the manager's URL; answers the response once its status is a success. */
export async function rawRequest(base: RawBase, path: string, init: RequestInit = {}): Promise<Response> {
  let response: Response;
  try {
    response = await (base.fetcher ?? fetch)(`${base.url}${path}`, { ...init, headers: { authorization: `Bearer ${base.token}`, ...init.headers } });
  } catch (error) {
    throw new ManagerUnreachableError(0, "MANAGER_UNREACHABLE", `cannot reach the manager at ${base.url}: ${(error as Error).message}`);
  }
  if (!response.ok) throw toSdkError(response.status, await response.json().catch(() => response.statusText));
  return response;
}
