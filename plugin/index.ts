// The session-sandbox OpenCode plugin: replaces the `bash` tool and the file tools (read, write, edit,
// glob, grep, apply_patch) so they run where the session's sandbox is, tags spawned shells for the shim,
// keeps the manager's sessions in step with OpenCode's, and offers a read-only `sandbox` tool. Talks to
// the manager only through sdk/. Export nothing but the plugin function: OpenCode calls every export.
import type { Plugin } from "@opencode-ai/plugin";
import { join } from "node:path";
import { createBashTool } from "./bash-tool";
import { loadPluginConfig } from "./config";
import { createFileTools } from "./file-tools/index";
import { createHostOnlyGuard } from "./host-only-guard";
import { createActivityReporter } from "./activity";
import { addInstance, managerOf, removeInstance } from "./provider";
import { createSandboxTool } from "./sandbox-tool";
import { createSessionTracker, type OpencodeSession } from "./sessions";
import { createShellEnvHook } from "./shell-env";

const SHIM = join(import.meta.dir, "shim");

export const SessionSandboxPlugin: Plugin = async (input, options) => {
  const config = loadPluginConfig(process.env, options ?? {});
  const instance = addInstance(input.directory, config);
  const log = (message: string, extra: object = {}) =>
    void input.client.app.log({ body: { service: "session-sandbox", level: "warn", message, extra: extra as Record<string, unknown> } }).catch(() => undefined);
  const fetchSession = async (id: string): Promise<OpencodeSession | null> => {
    const result = await input.client.session.get({ path: { id }, query: { directory: input.directory } });
    return result.data ? { id: result.data.id, directory: result.data.directory, parentID: result.data.parentID ?? null } : null;
  };
  const sessions = createSessionTracker(() => managerOf(instance), fetchSession, log);
  instance.reregister = sessions.reregister;
  const files = createFileTools(sessions);
  const activity = createActivityReporter({ manager: () => managerOf(instance), ensureRegistered: sessions.ensureRegistered, log, heartbeatMs: config.activityHeartbeatMs });
  if (!config.token) log("session-sandbox is not configured; every shell command will be refused", { problem: config.problem });

  return {
    // The shim must also be set as `shell` in a config file (PTY terminals and the V2 runtime read only
    // files); setting it here too covers `!` shell mode when the file forgot it.
    config: async (cfg) => {
      const record = cfg as Record<string, unknown>;
      if (!record.shell) record.shell = SHIM;
    },
    event: async ({ event }) => {
      if (event.type === "session.created") {
        const info = event.properties.info;
        sessions.onCreated({ id: info.id, directory: info.directory, parentID: info.parentID ?? null });
      } else if (event.type === "session.deleted") {
        files.forget(event.properties.info.id);
        activity.forget(event.properties.info.id);
        await sessions.onDeleted(event.properties.info.id);
      } else {
        // Not awaited: OpenCode waits for its plugins' event hooks, and a slow manager must not slow it.
        if (config.token) void activity.onEvent(event as { type: string; properties?: Record<string, unknown> });
      }
    },
    tool: { bash: createBashTool(sessions), ...files.tools, sandbox: createSandboxTool(sessions) },
    "tool.execute.before": createHostOnlyGuard(sessions, input.directory),
    "shell.env": createShellEnvHook(instance, sessions),
    dispose: async () => {
      activity.close();
      removeInstance(input.directory);
    },
  };
};
