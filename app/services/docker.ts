// A Docker Engine in a session's VM (docs/docker.md), on demand: POST /api/sessions/:id/docker/start installs
// the guest's helper (docker-helper.ts) and runs it there, through the exec path like any command of the
// manager's own (so in the VM, never on the host, and in the session's history). Which tiers can hold a
// daemon is the tier's answer (runtime/tiers/): the settings refuse the others, a command of a root that
// asked for Docker in a tier that cannot hold it is refused before it runs (exec-prepare.ts), and the
// settings' default applies only where the session's tier can. Switching docker off stops the daemon and
// removes its data from the VM, in the background (a stopped VM is started for it).
import { DockerUnavailableError } from "../errors";
import type { IsolationChoice } from "../../runtime/isolation";
import type { Logger } from "../log";
import { DOCKER_HELPER, DOCKER_HELPER_EXIT, INSTALL_AND_RUN } from "./docker-helper";
import type { ExecService } from "./exec";
import type { LifecycleEvent } from "./lifecycle-events";
import type { SessionSandboxService } from "./session-sandbox";

/** The helper waits up to 180 s for the daemon; the command gets that and room to report why it failed. */
const START_TIMEOUT_MS = 240_000;
const PURGE_TIMEOUT_MS = 60_000;
/** Bytes of the helper's stderr kept for a reason. */
const REASON_BYTES = 4096;

type HelperRun = { exitCode: number; stdout: string; stderr: string };

export type DockerStarted = { version: string };

export type DockerServiceDeps = {
  exec: Pick<ExecService, "startManaged">;
  sessionSandbox: Pick<SessionSandboxService, "get">;
  /** Why the tier an isolation choice runs in here cannot hold a Docker Engine; undefined: it can. */
  dockerRefusalFor: (isolation: IsolationChoice) => string | undefined;
  /** The roots that have a VM now: a root without one has no daemon or data to remove. */
  rootsWithVms: () => string[];
  log: Logger;
};

export function createDockerService({ exec, sessionSandbox, dockerRefusalFor, rootsWithVms, log }: DockerServiceDeps) {
  async function runHelper(sessionId: string, action: "start" | "purge", timeoutMs: number, signal: AbortSignal): Promise<HelperRun> {
    let stdout = "";
    let stderr = "";
    const started = await exec.startManaged(
      sessionId,
      { argv: ["sh", "-c", INSTALL_AND_RUN, "sandbox-docker", DOCKER_HELPER, action], label: `(docker: ${action})`, timeoutMs },
      {
        signal,
        onChunk: (stream, data) => {
          const text = Buffer.from(data).toString("utf8");
          if (stream === "stderr") stderr = (stderr + text).slice(-REASON_BYTES);
          else stdout = (stdout + text).slice(-REASON_BYTES);
          return undefined;
        },
      },
    );
    const settled = await started.outcome;
    if (!settled.ok) throw settled.error;
    if (settled.result.timedOut) return { exitCode: DOCKER_HELPER_EXIT.noAnswer, stdout, stderr: `${stderr}\nthe helper ran past ${timeoutMs} ms and was stopped` };
    return { exitCode: settled.result.exitCode ?? 1, stdout, stderr };
  }

  /**
   * Starts the session's daemon, or finds it answering; resolves once `docker version` shows a server.
   * Idempotent: concurrent calls (and the guest's own `sandbox-docker start`) make one daemon.
   */
  async function start(sessionId: string, signal: AbortSignal): Promise<DockerStarted> {
    const view = sessionSandbox.get(sessionId);
    if (!view.docker.effective) {
      throw new DockerUnavailableError(409, `docker is off for session ${sessionId}: turn it on for its root with PUT /api/session-sandbox/${view.rootSessionID} {"docker": true} (or \`session-sandbox docker ${view.rootSessionID} on\`), or the settings' docker default`);
    }
    // On by the settings' default, in a session whose own isolation cannot hold it.
    const refusal = dockerRefusalFor(view.isolation.effective);
    if (refusal) throw new DockerUnavailableError(409, `docker cannot run in this session's isolation (${view.isolation.effective}): ${refusal}`);
    const run = await runHelper(sessionId, "start", START_TIMEOUT_MS, signal);
    const version = /^docker (\S+) ready$/m.exec(run.stdout)?.[1];
    if (run.exitCode === 0 && version) return { version };
    const why = run.stderr.trim() || run.stdout.trim() || `the helper exited with ${run.exitCode}`;
    throw new DockerUnavailableError(409, `the session's VM could not start Docker: ${why}`);
  }

  /** A root's docker setting; undefined when it was deleted meanwhile (its VM goes anyway). */
  function dockerOf(rootSessionID: string) {
    try {
      return sessionSandbox.get(rootSessionID).docker;
    } catch {
      return undefined;
    }
  }

  function purge(rootSessionID: string): void {
    void runHelper(rootSessionID, "purge", PURGE_TIMEOUT_MS, new AbortController().signal)
      .then((run) => {
        if (run.exitCode !== 0) log.warn("removing Docker from a VM failed", { rootSessionID, reason: run.stderr.trim() || `exit ${run.exitCode}` });
      })
      .catch((error) => log.warn("removing Docker from a VM was not run", { rootSessionID, reason: (error as Error).message }));
  }

  /**
   * Docker switched off, for a root or as the default of the roots that follow it: in each of their VMs
   * the daemon stops and its data goes.
   */
  function onLifecycle(event: LifecycleEvent): void {
    if (event.type === "docker-off" && rootsWithVms().includes(event.rootSessionID)) purge(event.rootSessionID);
    if (event.type !== "settings-changed" || !event.keys.includes("docker")) return;
    for (const root of new Set(rootsWithVms())) {
      const docker = dockerOf(root);
      if (docker?.override === null && !docker.effective) purge(root);
    }
  }

  return { start, onLifecycle };
}

export type DockerService = ReturnType<typeof createDockerService>;
