// Where the manager is and how to reach it, for the plugin and its Bun shim: the SDK's one resolver
// (sdk/connection.ts: plugin options from the opencode.json tuple, then the environment, then the token
// file), plus the plugin's own opt-out. Shared by both, so they always agree on the target.
import { connectionOptionsFrom, resolveConnection } from "../sdk/connection";
import { ACTIVITY_HEARTBEAT_MS } from "../sdk/activity";

export type PluginConfig = {
  url: string;
  /** Null when the manager cannot be addressed or no token was found: every sandbox decision then fails closed with `problem`. */
  token: string | null;
  problem: string | null;
  /** Per manager API call (status, registration); a manager slower than this counts as unreachable. */
  managerTimeoutMs: number;
  /**
   * The one explicit opt-out of failing closed: when the manager cannot be reached, treat sessions as
   * not sandboxed and run on the host. Off unless SANDBOX_ALLOW_HOST_WHEN_UNREACHABLE=1 (or option).
   */
  allowHostWhenUnreachable: boolean;
  /**
   * How often a working session's activity is repeated to the manager (option `activityHeartbeatMs`,
   * 100 to 60000, default 60000). The manager counts a working session not heard of for 180 s as
   * quiescent, so more than 60 s is never taken.
   */
  activityHeartbeatMs: number;
};

type Env = Record<string, string | undefined>;
type Options = Record<string, unknown>;

export function loadPluginConfig(env: Env, options: Options = {}): PluginConfig {
  const connection = resolveConnection(connectionOptionsFrom(options), env);
  const allowHostWhenUnreachable = options.allowHostWhenUnreachable === true || env.SANDBOX_ALLOW_HOST_WHEN_UNREACHABLE === "1";
  const problem = connection.urlProblem ? `${connection.urlProblem.reason}: ${connection.urlProblem.fix}` : connection.tokenProblem;
  // A URL that cannot be used is a configuration error, not an unreachable manager: no token, so it fails closed.
  const token = connection.urlProblem ? null : connection.token;
  const heartbeat = options.activityHeartbeatMs;
  const activityHeartbeatMs = typeof heartbeat === "number" && Number.isInteger(heartbeat) && heartbeat >= 100 && heartbeat <= ACTIVITY_HEARTBEAT_MS ? heartbeat : ACTIVITY_HEARTBEAT_MS;
  return { url: connection.url, token, problem, managerTimeoutMs: connection.managerTimeoutMs, allowHostWhenUnreachable, activityHeartbeatMs };
}
