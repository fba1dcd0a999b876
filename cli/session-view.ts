// How `sandbox`, `resources`, `network`, `isolation`, `docker` and `images set` show a session's sandbox state: KEY value pairs, or JSON with ISO times.
import type { SandboxClient } from "../sdk/index";
import { formatMib, isoOrNull, isoTime, timeCell } from "./format";
import { renderPairs, type Output } from "./output";
import { describeNetwork } from "./network-arg";
import { describeImageChoice } from "./image-arg";

type SessionSandbox = Awaited<ReturnType<SandboxClient["sandbox"]["get"]>>;

export function sessionSandboxJson(state: SessionSandbox) {
  return {
    sessionID: state.sessionID,
    rootSessionID: state.rootSessionID,
    sandboxed: state.sandboxed,
    source: state.source,
    serverEnabled: state.serverEnabled,
    resources: { override: state.resources.override, effective: state.resources.effective },
    network: { override: state.network.override, effective: state.network.effective },
    image: { override: state.image.override, effective: state.image.effective },
    isolation: { override: state.isolation.override, effective: state.isolation.effective },
    docker: { override: state.docker.override, effective: state.docker.effective },
    toggledAt: isoOrNull(state.toggledAt),
    vmName: state.vmName,
    lastStop: state.lastStop && { vmName: state.lastStop.vmName, status: state.lastStop.status, reason: state.lastStop.reason, at: isoTime(state.lastStop.at) },
  };
}

export function sessionSandboxView(state: SessionSandbox, out: Output): string {
  const { override, effective } = state.resources;
  const origin = (value: unknown) => (value === null || value === undefined ? out.paint.dim("(default)") : "(session override)");
  const mode = state.sandboxed ? out.paint.green("on") : out.paint.yellow("off");
  const serverOff = state.serverEnabled ? "" : out.paint.red(" — sandboxing is disabled server-wide: `bun run settings set enabled=true`");
  const lastStop = state.lastStop ? `${state.lastStop.status} (${state.lastStop.reason ?? "no reason recorded"}) ${timeCell(state.lastStop.at, out)}` : "-";
  return renderPairs(
    [
      ["SESSION", out.paint.cyan(state.sessionID)],
      ["ROOT", state.rootSessionID],
      ["SANDBOX", `${mode} (${state.source})${serverOff}`],
      ["CPUS", `${effective.cpus} ${origin(override?.cpus)}`],
      ["MEMORY", `${formatMib(effective.memoryMib)} ${origin(override?.memoryMib)}`],
      ["NETWORK", `${describeNetwork(state.network.effective)} ${origin(state.network.override)}`],
      ["IMAGE", `${describeImageChoice(state.image.effective)} ${origin(state.image.override)}`],
      ["ISOLATION", `${state.isolation.effective} ${origin(state.isolation.override)}`],
      ["DOCKER", `${state.docker.effective ? "on" : "off"} ${origin(state.docker.override)}`],
      ["VM", state.vmName],
      ["TOGGLED", timeCell(state.toggledAt, out)],
      ["LAST STOP", lastStop],
    ],
    out.paint,
  );
}
