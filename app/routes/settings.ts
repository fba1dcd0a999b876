// /api/settings/sandbox: server-wide settings.
import { Elysia } from "elysia";
import { parseJsonObject } from "../http/json-body";
import { ErrorBody, SandboxSettings, SandboxSettingsPatch } from "../http/schemas";
import type { Services } from "../services";

export function settingsRoutes({ settings }: Services) {
  return new Elysia({ prefix: "/api/settings" })
    .get("/sandbox", () => settings.get(), {
      response: { 200: SandboxSettings, 401: ErrorBody },
      detail: { summary: "The effective server-wide sandbox settings" },
    })
    .patch("/sandbox", ({ body }) => settings.patch(body), {
      parse: parseJsonObject,
      body: SandboxSettingsPatch,
      response: { 200: SandboxSettings, 400: ErrorBody, 401: ErrorBody, 413: ErrorBody, 415: ErrorBody, 422: ErrorBody },
      detail: { summary: "Change settings; a key set to null returns to its default (env, then built-in)" },
    });
}
