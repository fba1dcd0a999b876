// The typed client for the manager: Eden treaty underneath, typed errors on top. Imports server *types*
// only; nothing from app/ ends up in an SDK bundle.
import { treaty } from "@elysiajs/eden";
import type { App } from "../app/index";
import { ManagerUnreachableError, toSdkError } from "./errors";
import { eventStream, type EventStreamOptions } from "./events";
import { execStream, runCollected, type ExecRequest } from "./exec";
import { openShell, type ShellOptions } from "./shell";

export * from "./errors";
export * from "./arbiter";
export type { ShellConnection, ShellExit, ShellOptions } from "./shell";
export type { ExecEvent, ExecRequest, RunResult } from "./exec";
export type { EventStreamOptions, SandboxEvent } from "./events";
export { eventIdAt } from "./events";

export type ClientOptions = {
  /** The manager's base URL, e.g. http://127.0.0.1:7878 */
  url: string;
  token: string;
  /** Per-request timeout; the default suits API calls, not long command streams. */
  timeoutMs?: number;
  /** For tests: route requests somewhere other than the network (e.g. app.handle). */
  fetcher?: typeof fetch;
};

type TreatyResult<T> = { data: T; error: null; status: number } | { data: null; error: { status: unknown; value: unknown }; status: number };

/** Turns a treaty result into its data, or throws the typed error for its failure. */
async function unwrap<T>(call: () => Promise<TreatyResult<T>>, url: string): Promise<Exclude<T, null>> {
  let result: TreatyResult<T>;
  try {
    result = await call();
  } catch (error) {
    throw new ManagerUnreachableError(0, "MANAGER_UNREACHABLE", `cannot reach the manager at ${url}: ${(error as Error).message}`);
  }
  if (result.error) {
    // Eden reports a failed fetch (refused, reset, timed out) as a 503 whose value is the thrown error.
    const value = result.error.value;
    if (value instanceof Error || value instanceof DOMException) {
      throw new ManagerUnreachableError(0, "MANAGER_UNREACHABLE", `cannot reach the manager at ${url}: ${value.message || value.name}`);
    }
    throw toSdkError(result.status, value);
  }
  return result.data as Exclude<T, null>;
}

/**
 * A path parameter as one URL segment: Eden inserts it as given, so an id like `ses/../x` would address
 * another route; encoded, the manager decodes it and refuses it with the reason (422).
 */
const segment = (value: string) => encodeURIComponent(value);

export function createClient({ url, token, timeoutMs = 30_000, fetcher }: ClientOptions) {
  const api = treaty<App>(url, {
    parseDate: false,
    headers: { authorization: `Bearer ${token}` },
    fetcher: fetcher as never,
    onRequest: () => ({ signal: AbortSignal.timeout(timeoutMs) }),
  }).api;

  return {
    /** The raw Eden treaty client, for routes without a helper. */
    api,
    health: () => unwrap(() => api.health.get(), url),
    sessions: {
      register: (body: { id: string; parentID?: string | null; forkOf?: string | null; directory: string }) =>
        unwrap(() => api.sessions.post(body), url),
      list: () => unwrap(() => api.sessions.get(), url),
      get: (id: string) => unwrap(() => api.sessions({ id: segment(id) }).get(), url),
      delete: (id: string) => unwrap(() => api.sessions({ id: segment(id) }).delete(), url),
    },
    sandbox: {
      get: (id: string) => unwrap(() => api["session-sandbox"]({ id: segment(id) }).get(), url),
      /**
       * `{sandboxed?, resources?: {cpus?, memoryMib?} | null, network?: NetworkPolicy | null, image?, secrets?: string[]}`;
       * null clears an override; `secrets` replaces the root's grants (names of configured secrets, never values).
       */
      set: (id: string, change: Parameters<ReturnType<(typeof api)["session-sandbox"]>["put"]>[0]) =>
        unwrap(() => api["session-sandbox"]({ id: segment(id) }).put(change), url),
    },
    /** Streams a command's events (started, stdout/stderr bytes, exit). Abort `signal` to cancel it in the VM. */
    exec: (sessionId: string, request: ExecRequest, signal?: AbortSignal) => execStream({ url, token, fetcher }, sessionId, request, signal),
    /** Runs a command and collects its output. */
    run: (sessionId: string, request: ExecRequest, signal?: AbortSignal) => runCollected(execStream({ url, token, fetcher }, sessionId, request, signal)),
    /** An interactive shell on a PTY in the session's VM, over a WebSocket (not through `fetcher`). */
    shell: (sessionId: string, options: ShellOptions) => openShell({ url, token }, sessionId, options),
    execs: {
      /** The session's exec history, newest first (a root: its whole tree; a child: its own); `limit` 1..200, default 50. */
      list: (sessionId: string, options: { limit?: number } = {}) => unwrap(() => api.sessions({ id: segment(sessionId) }).execs.get({ query: options }), url),
      /** Cancels the running command(s) with this call id; answers their history entries once they ended. */
      cancel: (sessionId: string, callID: string) => unwrap(() => api.sessions({ id: segment(sessionId) }).execs({ callID: segment(callID) }).cancel.post(), url),
    },
    /**
     * Server-sent events (VMs, commands, images, secrets, sessions, toggles, settings), each with its `id`.
     * Reconnects by itself with the last id, so nothing still buffered is lost; `replay-gap` and `overflow`
     * events say when something was. `since`: start after that event id. Abort `signal` to stop.
     */
    events: (signal?: AbortSignal, options?: EventStreamOptions) => eventStream({ url, token, fetcher }, signal, options),
    /** Every precondition of a working sandbox, each problem with its fix. */
    doctor: () => unwrap(() => api.doctor.get(), url),
    vms: {
      list: () => unwrap(() => api.vms.get(), url),
      remove: (name: string) => unwrap(() => api.vms({ name: segment(name) }).delete(), url),
      /** Runs the idle sweep now; `idleForMs` overrides the threshold (0: every idle VM); `dryRun` only lists. */
      sweep: (options: { idleForMs?: number; dryRun?: boolean } = {}) => unwrap(() => api.vms.sweep.post(options), url),
      /** Usage now (CPU seconds, memory, pids, disk) of one VM, or of every VM the manager knows. */
      stats: (name: string) => unwrap(() => api.vms({ name: segment(name) }).stats.get(), url),
      allStats: () => unwrap(() => api.vms.stats.get(), url),
    },
    images: {
      /** The built-in image and every image built or pulled on request, with status, size and users. */
      list: () => unwrap(() => api.images.get(), url),
      /** Starts a build or pull in the background (202); follow `image` events for progress. */
      pull: (choice: Parameters<typeof api.images.post>[0]) => unwrap(() => api.images.post(choice), url),
      /** Removes one cached image by key (`image` in the list); refused (409) while in use. */
      remove: (image: string) => unwrap(() => api.images({ image: encodeURIComponent(image) }).delete(), url),
      /** Removes every unused image last used at least `olderThanMs` ago; `dryRun` only lists. */
      prune: (options: { olderThanMs?: number; dryRun?: boolean } = {}) => unwrap(() => api.images.prune.post(options), url),
    },
    /** Host users with a token of their own (the manager's own token only; docs/non-root.md). */
    users: {
      /** Gives an account of the manager's host a token; the token is answered once. */
      add: (name: string) => unwrap(() => api.users.post({ name }), url),
      list: () => unwrap(() => api.users.get(), url),
      /** Takes the user's token away at once; its sessions stay until deleted. */
      remove: (name: string) => unwrap(() => api.users({ name: segment(name) }).delete(), url),
    },
    secrets: {
      /** The secrets configured on the manager: name, hosts and scope (all, or granted per session). Never a value. */
      list: () => unwrap(() => api.secrets.get(), url),
      /** Adds `names` to a root session's grants; answers its sandbox view (`secrets.effective` is what its commands get). */
      grant: async (sessionId: string, names: string[]) => {
        const { secrets } = await unwrap(() => api["session-sandbox"]({ id: segment(sessionId) }).get(), url);
        return unwrap(() => api["session-sandbox"]({ id: segment(sessionId) }).put({ secrets: [...new Set([...secrets.granted, ...names])] }), url);
      },
      /** Removes `names` from a root session's grants; its open egress connections are cut. */
      revoke: async (sessionId: string, names: string[]) => {
        const { secrets } = await unwrap(() => api["session-sandbox"]({ id: segment(sessionId) }).get(), url);
        return unwrap(() => api["session-sandbox"]({ id: segment(sessionId) }).put({ secrets: secrets.granted.filter((name) => !names.includes(name)) }), url);
      },
    },
    ca: {
      /** The manager CA every VM trusts: certificate (PEM), SHA-256 fingerprint, expiry (epoch ms). */
      get: () => unwrap(() => api.ca.get(), url),
      /** A new CA (new key); every VM trusts it from its next command. Answers the new CA and the previous fingerprint. */
      rotate: () => unwrap(() => api.ca.rotate.post(), url),
    },
    settings: {
      get: () => unwrap(() => api.settings.sandbox.get(), url),
      /** What each setting returns to when patched to null (env, then built-in). */
      defaults: () => unwrap(() => api.settings.sandbox.defaults.get(), url),
      patch: (change: Parameters<typeof api.settings.sandbox.patch>[0]) => unwrap(() => api.settings.sandbox.patch(change), url),
    },
  };
}

export type SandboxClient = ReturnType<typeof createClient>;
