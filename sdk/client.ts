// The typed client for the manager: Eden treaty underneath, typed errors on top. Its public shape,
// SandboxClient, is written with the SDK's own types (api-types.ts, generated from the OpenAPI
// document); createClient is annotated with it, so tsc checks the server's Eden types against them here,
// and the published SDK carries no server code or types.
import type * as Api from "./api-types";
import type { ClientOptions } from "./client-options";
import { createEdenApi } from "./eden";
import { ManagerUnreachableError, toSdkError } from "./errors";
import { eventStream, type EventStreamOptions } from "./events";
import { execStream, runCollected, type ExecEvent, type ExecRequest, type RunResult } from "./exec";
import { openFile, writeFile, type FileWritten, type OpenedFile, type ReadFileOptions, type WriteFileOptions } from "./files";
import { processLogs, startBackground, type BackgroundStarted, type ProcessList, type ProcessLogEvent } from "./processes";
import { openShell, type ShellConnection, type ShellOptions } from "./shell";

export type { ClientOptions };

export interface SandboxClient {
  /** Liveness, version, runtime in use (or why none is), host limits. */
  health(): Promise<Api.Health>;
  sessions: {
    /** Registers a session (or confirms an identical registration); a different registration is a SessionConflictError. */
    register(body: Api.RegisterSessionBody): Promise<Api.Session>;
    list(): Promise<Api.SessionList>;
    get(id: string): Promise<Api.Session>;
    /** Deletes a session and its descendants; a root's VM and volume go with it. */
    delete(id: string): Promise<Api.DeletedSessions>;
    /**
     * Reports what the session's agent is doing (busy, idle, retry with its attempt, question, permission). A
     * working session holds its root's VM against the idle sweep and the cap; repeat a busy report at least
     * every 60 s, or it counts as quiescent after 180 s.
     */
    reportActivity(id: string, report: Api.ActivityReport): Promise<Api.SessionActivity>;
  };
  sandbox: {
    get(id: string): Promise<Api.SessionSandbox>;
    /**
     * `{sandboxed?, resources?: {cpus?, memoryMib?} | null, network?: NetworkPolicy | null, image?, secrets?: string[]}`;
     * null clears an override; `secrets` replaces the root's grants (names of configured secrets, never values).
     */
    set(id: string, change: Api.SessionSandboxUpdate): Promise<Api.SessionSandbox>;
  };
  /** Streams a command's events (started, stdout/stderr bytes, exit). Abort `signal` to cancel it in the VM. */
  exec(sessionId: string, request: ExecRequest, signal?: AbortSignal): AsyncGenerator<ExecEvent>;
  /** Runs a command and collects its output. */
  run(sessionId: string, request: ExecRequest, signal?: AbortSignal): Promise<RunResult>;
  /** Files in the session's VM: every path is resolved inside the VM (its links are the VM's, never the host's). */
  files: {
    /** The file's bytes. */
    read(sessionId: string, path: string, options?: ReadFileOptions): Promise<Uint8Array>;
    /** The file's bytes (or with `tar`, a tar of a file or directory) as a stream, for large ones; a file's size and mode. */
    open(sessionId: string, path: string, options?: ReadFileOptions): Promise<OpenedFile>;
    /** Writes a file (parents made, `mode` e.g. "0755"), or with `tar` unpacks a tar into the directory `path`. */
    write(sessionId: string, path: string, data: string | Uint8Array | ReadableStream<Uint8Array>, options?: WriteFileOptions): Promise<FileWritten>;
  };
  /** Commands running in the session's VM: background ones (a dev server, a watcher) and foreground ones in progress. */
  processes: {
    /** Starts a command in the background and answers its call id at once; its latest output is kept. */
    start(sessionId: string, request: Omit<ExecRequest, "stdin">): Promise<BackgroundStarted>;
    list(sessionId: string): Promise<ProcessList>;
    /** Its latest output (a background command's last 1 MiB, a foreground one's 64 KiB), then with `follow` what comes until it ends. */
    logs(sessionId: string, callID: string, options?: { follow?: boolean; signal?: AbortSignal }): AsyncGenerator<ProcessLogEvent>;
    /** Kills its whole tree in the VM; answers once it ended. */
    kill(sessionId: string, callID: string): Promise<Api.Answer<"killProcess">>;
  };
  /** Ports of the session's VM forwarded to the manager's host (loopback by default): a dev server's URL. */
  ports: {
    /** Forwards `port` of the VM to `hostPort` (default: a free one); answers the URL. The VM must be running. */
    open(sessionId: string, request: Api.RequestBody<"openPort">): Promise<Api.Answer<"openPort">>;
    list(sessionId: string): Promise<Api.Answer<"listPorts">>;
    close(sessionId: string, port: number): Promise<Api.Answer<"closePort">>;
  };
  /** A Docker Engine in the session's VM (its docker setting on, a tier that can hold one). */
  docker: {
    /** Starts the daemon, or finds it answering; resolves with its version once `docker version` shows a server (up to 180 s). */
    start(sessionId: string): Promise<Api.Answer<"startDocker">>;
  };
  /** An interactive shell on a PTY in the session's VM, over a WebSocket (not through `fetcher`). */
  shell(sessionId: string, options: ShellOptions): ShellConnection;
  execs: {
    /** The session's exec history, newest first (a root: its whole tree; a child: its own); `limit` 1..200, default 50. */
    list(sessionId: string, options?: { limit?: number }): Promise<Api.ExecHistory>;
    /** Cancels the running command(s) with this call id; answers their history entries once they ended. */
    cancel(sessionId: string, callID: string): Promise<Api.CancelledExecs>;
  };
  /**
   * Server-sent events (VMs, commands, images, secrets, sessions, toggles, settings), each with its `id`.
   * Reconnects by itself with the last id, so nothing still buffered is lost; `replay-gap` and `overflow`
   * events say when something was. `since`: start after that event id. Abort `signal` to stop.
   */
  events(signal?: AbortSignal, options?: EventStreamOptions): AsyncGenerator<Api.SandboxEvent>;
  /** Every precondition of a working sandbox, each problem with its fix. */
  doctor(): Promise<Api.DoctorReport>;
  vms: {
    list(): Promise<Api.VmList>;
    remove(name: string): Promise<Api.RemovedVm>;
    /** Runs the idle sweep now; `idleForMs` overrides the threshold (0: every idle VM); `dryRun` only lists. */
    sweep(options?: Api.RequestBody<"sweepVms">): Promise<Api.SweepResult>;
    /** Usage now (CPU seconds, memory, pids, disk) of one VM, or of every VM the manager knows. */
    stats(name: string): Promise<Api.VmStats>;
    allStats(): Promise<Api.AllVmStats>;
  };
  images: {
    /** The built-in image and every image built or pulled on request, with status, size and users. */
    list(): Promise<Api.ImageList>;
    /** Starts a build or pull in the background (202); follow `image` events for progress. */
    pull(choice: Api.RequestBody<"prepareImage">): Promise<Api.PreparedImage>;
    /** Removes one cached image by key (`image` in the list); refused (409) while in use. */
    remove(image: string): Promise<Api.RemovedImage>;
    /** Removes every unused image last used at least `olderThanMs` ago; `dryRun` only lists. */
    prune(options?: Api.RequestBody<"pruneImages">): Promise<Api.PrunedImages>;
  };
  /** Host users with a token of their own (the manager's own token only; docs/non-root.md). */
  users: {
    /** Gives an account of the manager's host a token; the token is answered once. */
    add(name: string): Promise<Api.AddedUser>;
    list(): Promise<Api.UserList>;
    /** Takes the user's token away at once; its sessions stay until deleted. */
    remove(name: string): Promise<Api.RemovedUser>;
  };
  secrets: {
    /** The secrets configured on the manager: name, hosts and scope (all, or granted per session). Never a value. */
    list(): Promise<Api.SecretList>;
    /** Adds `names` to a root session's grants; answers its sandbox view (`secrets.effective` is what its commands get). */
    grant(sessionId: string, names: string[]): Promise<Api.SessionSandbox>;
    /** Removes `names` from a root session's grants; its open egress connections are cut. */
    revoke(sessionId: string, names: string[]): Promise<Api.SessionSandbox>;
  };
  ca: {
    /** The manager CA every VM trusts: certificate (PEM), SHA-256 fingerprint, expiry (epoch ms). */
    get(): Promise<Api.ManagerCaView>;
    /** A new CA (new key); every VM trusts it from its next command. Answers the new CA and the previous fingerprint. */
    rotate(): Promise<Api.RotatedCa>;
  };
  settings: {
    get(): Promise<Api.SandboxSettings>;
    /** What each setting returns to when patched to null (env, then built-in). */
    defaults(): Promise<Api.SettingDefaults>;
    patch(change: Api.SandboxSettingsPatch): Promise<Api.SandboxSettings>;
  };
}

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

export function createClient(options: ClientOptions): SandboxClient {
  const { url, token, fetcher } = options;
  const api = createEdenApi(options);
  const sandboxOf = (id: string) => api["session-sandbox"]({ id: segment(id) });

  return {
    health: () => unwrap(() => api.health.get(), url),
    sessions: {
      register: (body) => unwrap(() => api.sessions.post(body), url),
      list: () => unwrap(() => api.sessions.get(), url),
      get: (id) => unwrap(() => api.sessions({ id: segment(id) }).get(), url),
      delete: (id) => unwrap(() => api.sessions({ id: segment(id) }).delete(), url),
      reportActivity: (id, report) => unwrap(() => api.sessions({ id: segment(id) }).activity.post(report), url),
    },
    sandbox: {
      get: (id) => unwrap(() => sandboxOf(id).get(), url),
      set: (id, change) => unwrap(() => sandboxOf(id).put(change), url),
    },
    exec: (sessionId, request, signal) => execStream({ url, token, fetcher }, sessionId, request, signal),
    run: (sessionId, request, signal) => runCollected(execStream({ url, token, fetcher }, sessionId, request, signal)),
    files: {
      read: async (sessionId, path, readOptions) => new Uint8Array(await new Response((await openFile({ url, token, fetcher }, sessionId, path, readOptions)).body).arrayBuffer()),
      open: (sessionId, path, readOptions) => openFile({ url, token, fetcher }, sessionId, path, readOptions),
      write: (sessionId, path, data, writeOptions) => writeFile({ url, token, fetcher }, sessionId, path, data, writeOptions),
    },
    processes: {
      start: (sessionId, request) => startBackground({ url, token, fetcher }, sessionId, request),
      list: (sessionId) => unwrap(() => api.sessions({ id: segment(sessionId) }).processes.get(), url),
      logs: (sessionId, callID, logOptions) => processLogs({ url, token, fetcher }, sessionId, callID, logOptions),
      kill: (sessionId, callID) => unwrap(() => api.sessions({ id: segment(sessionId) }).processes({ callID: segment(callID) }).delete(), url),
    },
    ports: {
      open: (sessionId, request) => unwrap(() => api.sessions({ id: segment(sessionId) }).ports.post(request), url),
      list: (sessionId) => unwrap(() => api.sessions({ id: segment(sessionId) }).ports.get(), url),
      close: (sessionId, port) => unwrap(() => api.sessions({ id: segment(sessionId) }).ports({ port: String(port) }).delete(), url),
    },
    docker: {
      start: (sessionId) => unwrap(() => api.sessions({ id: segment(sessionId) }).docker.start.post(), url),
    },
    shell: (sessionId, shellOptions) => openShell({ url, token }, sessionId, shellOptions),
    execs: {
      list: (sessionId, listOptions = {}) => unwrap(() => api.sessions({ id: segment(sessionId) }).execs.get({ query: listOptions }), url),
      cancel: (sessionId, callID) => unwrap(() => api.sessions({ id: segment(sessionId) }).execs({ callID: segment(callID) }).cancel.post(), url),
    },
    events: (signal, streamOptions) => eventStream({ url, token, fetcher }, signal, streamOptions),
    doctor: () => unwrap(() => api.doctor.get(), url),
    vms: {
      list: () => unwrap(() => api.vms.get(), url),
      remove: (name) => unwrap(() => api.vms({ name: segment(name) }).delete(), url),
      sweep: (sweepOptions = {}) => unwrap(() => api.vms.sweep.post(sweepOptions), url),
      stats: (name) => unwrap(() => api.vms({ name: segment(name) }).stats.get(), url),
      allStats: () => unwrap(() => api.vms.stats.get(), url),
    },
    images: {
      list: () => unwrap(() => api.images.get(), url),
      pull: (choice) => unwrap(() => api.images.post(choice), url),
      remove: (image) => unwrap(() => api.images({ image: encodeURIComponent(image) }).delete(), url),
      prune: (pruneOptions = {}) => unwrap(() => api.images.prune.post(pruneOptions), url),
    },
    users: {
      add: (name) => unwrap(() => api.users.post({ name }), url),
      list: () => unwrap(() => api.users.get(), url),
      remove: (name) => unwrap(() => api.users({ name: segment(name) }).delete(), url),
    },
    secrets: {
      list: () => unwrap(() => api.secrets.get(), url),
      grant: async (sessionId, names) => {
        const { secrets } = await unwrap(() => sandboxOf(sessionId).get(), url);
        return unwrap(() => sandboxOf(sessionId).put({ secrets: [...new Set([...secrets.granted, ...names])] }), url);
      },
      revoke: async (sessionId, names) => {
        const { secrets } = await unwrap(() => sandboxOf(sessionId).get(), url);
        return unwrap(() => sandboxOf(sessionId).put({ secrets: secrets.granted.filter((name) => !names.includes(name)) }), url);
      },
    },
    ca: {
      get: () => unwrap(() => api.ca.get(), url),
      rotate: () => unwrap(() => api.ca.rotate.post(), url),
    },
    settings: {
      get: () => unwrap(() => api.settings.sandbox.get(), url),
      defaults: () => unwrap(() => api.settings.sandbox.defaults.get(), url),
      patch: (change) => unwrap(() => api.settings.sandbox.patch(change), url),
    },
  };
}
