/** @jsxImportSource preact */
// One VM's page (#vm/<name>): its spec and state, CPU and memory over the last minutes (polled every 2 s
// while the tab is visible), what runs in it with live output, its recent commands, its forwarded ports,
// and acting on it: run a command (in the background, its output shown as it comes) or remove it.
import { useEffect, useRef, useState } from "preact/hooks";
import type { Answer } from "../../../sdk/api-types";
import { cpuPercentBetween } from "../../../sdk/cpu-percent";
import { api, describeError } from "../api";
import { ErrorText } from "../error-text";
import { bytes, cpuCount, when } from "../format";
import { followOutput, type OutputEnd } from "../live-output";
import { RemoveVm } from "../remove-vm";
import { Sparkline } from "../sparkline";
import { useTicker } from "../ticker";
import { useApi } from "../use-api";
import { outcomeOf } from "./activity";
import type { PageProps } from "./page-props";

type Vm = Answer<"listVms">["vms"][number];
type Stats = Answer<"getVmStats">;
type Processes = Answer<"listProcesses">;
type Ports = Answer<"listPorts">;
type History = Answer<"listExecs">;

/** Readings kept for the charts: 5 minutes at one every 2 s. */
const KEPT_READINGS = 150;
const POLL_MS = 2000;

type Reading = { at: number; cpuPercent: number; memoryMib: number };

/** CPU and memory readings since the page opened; CPU % from the CPU seconds between two reads (100% = one CPU). */
function useUsage(name: string, poll: number): { readings: Reading[]; stats: Stats | undefined; error: unknown } {
  const stats = useApi<Stats>(`/api/vms/${encodeURIComponent(name)}/stats`, poll);
  const readings = useRef<Reading[]>([]);
  const last = useRef<Stats | undefined>(undefined);
  const now = stats.data;
  if (now && now !== last.current && now.cpuSeconds !== null) {
    const cpuPercent = cpuPercentBetween(last.current, now);
    if (cpuPercent !== null) readings.current = [...readings.current, { at: now.at, cpuPercent, memoryMib: (now.memoryBytes ?? 0) / 1024 / 1024 }].slice(-KEPT_READINGS);
    last.current = now;
  }
  return { readings: readings.current, stats: now, error: stats.error };
}

/** A running command's output as it comes, until it ends. */
function LiveOutput({ session, callID }: { session: string; callID: string }) {
  const [text, setText] = useState("");
  const [end, setEnd] = useState<OutputEnd | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const abort = new AbortController();
    followOutput(session, callID, abort.signal, { text: (more) => setText((old) => (old + more).slice(-65_536)), end: setEnd }).catch((err: unknown) => !abort.signal.aborted && setError(describeError(err)));
    return () => abort.abort();
  }, [session, callID]);
  const ended = end === null ? "running" : "error" in end ? `failed: ${end.error}` : end.timedOut ? "timed out" : end.cancelled ? "cancelled" : `exit ${end.exitCode}`;
  return (
    <section aria-label={`Output of ${callID}`}>
      <p class="muted" role="status">
        {callID}: {ended}
      </p>
      <pre class="output" tabIndex={0}>{text}</pre>
      {error && <p class="error">{error}</p>}
    </section>
  );
}

/** Where the terminal's own bundle is served: fetched only when a terminal is opened (a variable, so the page's bundle does not take it in). */
const TERMINAL_MODULE = "/ui/terminal.js";

/** The session's interactive shell in the page (xterm.js over the shell WebSocket, opened with a ticket). */
function TerminalPanel({ session }: { session: string }) {
  const box = useRef<HTMLDivElement>(null);
  const handle = useRef<{ close(): void } | null>(null);
  const [state, setState] = useState<"closed" | "opening" | "open">("closed");
  const [ended, setEnded] = useState<string | null>(null);
  useEffect(() => () => handle.current?.close(), []);
  async function open() {
    setState("opening");
    setEnded(null);
    try {
      const terminal = (await import(TERMINAL_MODULE)) as typeof import("../terminal/main");
      handle.current = await terminal.openTerminal(box.current!, session, setEnded);
      setState("open");
    } catch (err) {
      setEnded(describeError(err));
      setState("closed");
    }
  }
  function close() {
    handle.current?.close();
    handle.current = null;
    setState("closed");
  }
  return (
    <section aria-label="Terminal">
      {state === "open" ? (
        <button type="button" onClick={close}>
          Close the terminal
        </button>
      ) : (
        <button type="button" onClick={open} disabled={state === "opening"}>
          Open a terminal
        </button>
      )}
      {ended && (
        <p class="muted" role="status">
          {ended}
        </p>
      )}
      <div class="terminal" ref={box} hidden={state === "closed"} />
    </section>
  );
}

/** This VM's state changes, newest first, from the event feed (which the page backfills from the manager's ring). */
function stateHistory(feed: PageProps["feed"], name: string): { id: string; at: number; status: string; reason: string | null }[] {
  return feed.flatMap((message) => {
    try {
      const event = JSON.parse(message.data) as { type?: string; vmName?: string; status?: string; reason?: string | null; at?: number };
      return event.type === "vm" && event.vmName === name && event.status && event.at ? [{ id: message.id ?? String(event.at), at: event.at, status: event.status, reason: event.reason ?? null }] : [];
    } catch {
      return [];
    }
  });
}

export function VmPage({ name, tick, feed }: { name: string; tick: number; feed: PageProps["feed"] }) {
  const poll = useTicker(POLL_MS);
  const vms = useApi<Answer<"listVms">>("/api/vms", tick);
  const vm: Vm | undefined = vms.data?.vms.find((v) => v.name === name);
  const root = vm?.rootSessionID ?? null;
  const usage = useUsage(name, tick + poll);
  const processes = useApi<Processes>(root ? `/api/sessions/${encodeURIComponent(root)}/processes` : null, tick + poll);
  const history = useApi<History>(root ? `/api/sessions/${encodeURIComponent(root)}/execs?limit=10` : null, tick);
  const ports = useApi<Ports>(root ? `/api/sessions/${encodeURIComponent(root)}/ports` : null, tick);
  const sandbox = useApi<Answer<"getSessionSandbox">>(root ? `/api/session-sandbox/${encodeURIComponent(root)}` : null, tick);
  const [watching, setWatching] = useState<string | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);
  const states = stateHistory(feed, name);

  async function forwardPort(event: Event) {
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    const port = Number(new FormData(form).get("port"));
    if (!root) return;
    setActionError(null);
    try {
      await api("POST", `/api/sessions/${encodeURIComponent(root)}/ports`, { port });
      form.reset();
    } catch (err) {
      setActionError(describeError(err));
    }
  }

  async function runCommand(event: Event) {
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    const command = String(new FormData(form).get("command") ?? "").trim();
    if (!root || !command) return;
    setActionError(null);
    try {
      const started = await api<{ callID: string }>("POST", `/api/sessions/${encodeURIComponent(root)}/exec`, { command, background: true });
      setWatching(started.callID);
      form.reset();
    } catch (err) {
      setActionError(describeError(err));
    }
  }

  if (vms.data && !vm) return <p>No VM named {name} (it was removed). <a href="#vms">All VMs</a></p>;
  const memoryLimitMib = usage.stats?.memoryLimitBytes ? usage.stats.memoryLimitBytes / 1024 / 1024 : (vm?.spec?.memoryMib ?? 0);
  return (
    <>
      <ErrorText error={vms.error ?? usage.error ?? processes.error ?? history.error ?? ports.error} />
      {vm && (
        <dl class="facts">
          <dt>Session</dt>
          <dd>{vm.rootSessionID ?? "—"}</dd>
          <dt>Status</dt>
          <dd>
            {vm.status}
            {vm.lastStopReason && ` (last stop: ${vm.lastStopReason})`}
          </dd>
          <dt>Spec</dt>
          <dd>{vm.spec ? `${cpuCount(vm.spec.cpus)}, ${vm.spec.memoryMib} MiB, /tmp ${vm.spec.tmpSizeMib} MiB` : "—"}</dd>
          <dt>Isolation tier</dt>
          <dd>{sandbox.data ? `${sandbox.data.isolation.effective}${sandbox.data.isolation.override === null ? " (the settings' default)" : " (set for this session)"}` : "—"}</dd>
          <dt>Docker Engine</dt>
          <dd>{sandbox.data ? `${sandbox.data.docker.effective ? "on" : "off"}${sandbox.data.docker.override === null ? " (the settings' default)" : " (set for this session)"}` : "—"}</dd>
          <dt>Image</dt>
          <dd>{vm.spec?.image ?? "—"}</dd>
          <dt>Created / last used</dt>
          <dd>
            {when(vm.createdAt)} / {when(vm.lastUsedAt)}
          </dd>
          <dt>Disk</dt>
          <dd>{usage.stats?.available ? `${bytes(usage.stats.diskUsedBytes)} of ${bytes(usage.stats.diskSizeBytes)}` : (usage.stats?.reason ?? "—")}</dd>
        </dl>
      )}
      <h2>State over time</h2>
      {states.length === 0 ? (
        <p class="muted">No state change in the manager's event ring.</p>
      ) : (
        <ul>
          {states.slice(0, 10).map((h) => (
            <li key={h.id}>
              {when(h.at)} {h.status}
              {h.reason && ` (${h.reason})`}
            </li>
          ))}
        </ul>
      )}
      <h2>Usage</h2>
      <div class="charts">
        <Sparkline label="CPU" unit="%" values={usage.readings.map((r) => r.cpuPercent)} max={(vm?.spec?.cpus ?? 1) * 100} />
        <Sparkline label="Memory" unit="MiB" values={usage.readings.map((r) => r.memoryMib)} max={memoryLimitMib} />
      </div>
      <h2>Running now</h2>
      {(processes.data?.processes ?? []).length === 0 ? (
        <p class="muted">Nothing runs.</p>
      ) : (
        <ul>
          {processes.data!.processes.map((p) => (
            <li key={p.callID}>
              <code>{p.command.split("\n")[0]}</code> — {p.background ? "background" : "foreground"}, since {when(p.startedAt)}{" "}
              <button type="button" onClick={() => setWatching(p.callID)} aria-label={`Show output of ${p.callID}`}>
                Show output
              </button>
            </li>
          ))}
        </ul>
      )}
      {root && watching && <LiveOutput key={watching} session={root} callID={watching} />}
      <h2>Terminal</h2>
      {root ? <TerminalPanel session={root} /> : <p class="muted">The VM belongs to no session.</p>}
      <form class="field" aria-label="Run a command" onSubmit={runCommand}>
        <label for="vm-command">Run a command</label>
        <input id="vm-command" name="command" required />
        <button type="submit" disabled={!root}>
          Run
        </button>
      </form>
      <h2>Recent commands</h2>
      <ul>
        {(history.data?.execs ?? []).map((e) => (
          <li key={e.id}>
            {when(e.startedAt)} <code>{e.command.split("\n")[0]}</code> — {outcomeOf(e)}
            {e.durationMs !== null && `, ${e.durationMs} ms`}
            {e.outputTail && (
              <details>
                <summary>Output (its last {e.outputTail.length} characters)</summary>
                <pre class="output">{e.outputTail}</pre>
              </details>
            )}
          </li>
        ))}
      </ul>
      <h2>Forwarded ports</h2>
      <form class="field" aria-label="Forward a port" onSubmit={forwardPort}>
        <label for="vm-port">Forward the VM's port</label>
        <input id="vm-port" name="port" type="number" min={1} max={65535} required />
        <button type="submit" disabled={!root || vm?.status !== "running"}>
          Forward
        </button>
      </form>
      {(ports.data?.ports ?? []).length === 0 ? (
        <p class="muted">None.</p>
      ) : (
        <ul>
          {ports.data!.ports.map((p) => (
            <li key={p.port}>
              VM port {p.port}: <a href={p.url}>{p.url}</a>
            </li>
          ))}
        </ul>
      )}
      <h2>Remove</h2>
      <p>
        <RemoveVm name={name} onRemoved={() => (location.hash = "vms")} />
      </p>
      {actionError && (
        <p class="error" role="alert">
          {actionError}
        </p>
      )}
    </>
  );
}
