// How to reach the manager: what createClient (client.ts) and the raw Eden client (eden.ts) both take.
export type ClientOptions = {
  /** The manager's base URL, e.g. http://127.0.0.1:7878 */
  url: string;
  token: string;
  /** Per-request timeout; the default suits API calls, not long command streams. */
  timeoutMs?: number;
  /** For tests: route requests somewhere other than the network (e.g. app.handle). */
  fetcher?: typeof fetch;
};
