// /api/settings/sandbox: server-wide settings.
import { Elysia } from "elysia";
import { jsonObjectBody } from "../http/json-body";
import { errors, SandboxSettings, SandboxSettingsPatch } from "../http/schemas";
import type { Services } from "../services";

export function settingsRoutes({ settings }: Services) {
  return new Elysia({ prefix: "/api/settings", tags: ["settings"] })
    .get("/sandbox", () => settings.get(), {
      response: { 200: SandboxSettings, ...errors(401) },
      detail: { operationId: "getSettings", summary: "The effective server-wide sandbox settings" },
    })
    .get("/sandbox/defaults", () => settings.defaults(), {
      response: { 200: SandboxSettings, ...errors(401) },
      detail: { operationId: "getSettingDefaults", summary: "What each setting returns to when set to null: the manager's environment, then the built-in value" },
    })
    .patch("/sandbox", ({ body }) => settings.patch(body), {
      parse: jsonObjectBody,
      body: SandboxSettingsPatch,
      response: { 200: SandboxSettings, ...errors(400, 401, 403, 413, 415, 422) },
      detail: { operationId: "updateSettings", summary: "Change settings; a key set to null returns to its default (env, then built-in)" },
    });
}
