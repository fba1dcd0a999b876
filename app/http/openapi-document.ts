// The OpenAPI 3.1 document: @elysiajs/openapi's generator turns the route schemas into paths, and
// finishDocument() fixes, in this one place, what that generator cannot express (each fix says why).
// Checked by redocly lint, swagger-parser and a generated openapi-fetch client (test/routes/openapi.test.ts).
import { toOpenAPISchema, unwrapSchema } from "@elysiajs/openapi/openapi";
import type { TSchema } from "@sinclair/typebox";
import { Elysia } from "elysia";
import * as schemas from "./schemas";
import { EventStreamFrame, ExecStreamEvent, SandboxEvent } from "./stream-schemas";

const OPENAPI_VERSION = "3.1.2";

type Json = Record<string, unknown>;
type Operation = Json & { responses?: Record<string, Json> };
type Document = Json & { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Json> } };

/** Named in components.schemas: every inline copy the generator writes becomes a $ref to its name. */
const COMPONENTS: Record<string, TSchema> = {
  ErrorBody: schemas.ErrorBody,
  Health: schemas.Health,
  RegisterSessionBody: schemas.RegisterSessionBody,
  Session: schemas.Session,
  ListedSession: schemas.ListedSession,
  DeletedSessions: schemas.DeletedSessions,
  Resources: schemas.Resources,
  NetworkPolicy: schemas.NetworkPolicy,
  ImageChoice: schemas.ImageChoice,
  SessionSandbox: schemas.SessionSandbox,
  SessionSandboxUpdate: schemas.SessionSandboxUpdate,
  ConfiguredSecret: schemas.ConfiguredSecret,
  SandboxSettings: schemas.SandboxSettings,
  SandboxSettingsPatch: schemas.SandboxSettingsPatch,
  ExecBody: schemas.ExecBody,
  ExecStreamEvent,
  ExecHistoryEntry: schemas.ExecHistoryEntry,
  SandboxEvent,
  EventStreamFrame,
  Vm: schemas.Vm,
  ImageView: schemas.ImageView,
  ManagerCaView: schemas.ManagerCaView,
  RotatedCa: schemas.RotatedCa,
};

const TAGS = [
  { name: "health", description: "Liveness; the one route without a token" },
  { name: "sessions", description: "OpenCode sessions: register, list, get, delete" },
  { name: "session-sandbox", description: "A session's sandbox: toggle, resources, network, image, secret grants" },
  { name: "settings", description: "Server-wide sandbox settings" },
  { name: "exec", description: "Commands run in a session's VM" },
  { name: "ports", description: "Ports of a session's VM forwarded to the manager's host (inbound only)" },
  { name: "docker", description: "A Docker Engine in a session's VM, on a tier that can hold one" },
  { name: "files", description: "Files read from and written into a session's VM (resolved inside it)" },
  { name: "vms", description: "The VMs the manager knows" },
  { name: "users", description: "Host users with a token of their own: their sessions only (docs/non-root.md)" },
  { name: "images", description: "Guest images built or pulled on request" },
  { name: "secrets", description: "Secrets configured on the manager (names, never values)" },
  { name: "ca", description: "The manager CA every VM trusts" },
  { name: "ops", description: "Events, metrics and the doctor report" },
];

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/**
 * Responses the generator writes as text/plain, since their route schema is a string: it has no way to name
 * another media type. Each gets its own, with the schema of one item of the stream.
 */
const STREAMS: { path: string; method: string; description: string; content: Record<string, { schema: object }> }[] = [
  {
    path: "/api/sessions/{id}/exec",
    method: "post",
    description: "The command's events, one JSON object per line (the schema is that of one line); or, with `Accept: text/plain`, its output as text",
    content: {
      "application/x-ndjson": { schema: ref("ExecStreamEvent") },
      "text/plain": {
        schema: {
          type: "string",
          description:
            "With `Accept: text/plain`: stdout and stderr as they come, merged, then one line of its own: " +
            "`session-sandbox: exit=<code> timedOut=<bool> cancelled=<bool>`, or `session-sandbox: error=<CODE> <message>`",
        },
      },
    },
  },
  {
    path: "/api/events",
    method: "get",
    description: "Server-sent events (the schema is that of one frame; its data is a SandboxEvent)",
    content: { "text/event-stream": { schema: ref("EventStreamFrame") } },
  },
];

/** Replaces each object deep-equal to a named component (by its JSON) with a $ref; `keep` is left as it is. */
function referComponents(node: unknown, byJson: Map<string, string>, keep?: unknown): unknown {
  if (Array.isArray(node)) return node.map((item) => referComponents(item, byJson));
  if (typeof node !== "object" || node === null) return node;
  const name = node === keep ? undefined : byJson.get(JSON.stringify(node));
  if (name) return ref(name);
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, referComponents(value, byJson)]));
}

/**
 * Elysia's t.Nullable adds OpenAPI 3.0's `nullable: true` beside the 3.1 type array the generator writes
 * (elysiajs/elysia#1577); 3.1 has no such keyword. Only `nullable: true` next to `type` or `anyOf` is a
 * keyword: a property named nullable would hold a schema.
 */
function dropNullable(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(dropNullable);
  if (typeof node !== "object" || node === null) return node;
  const entries = Object.entries(node).filter(([key, value]) => !(key === "nullable" && value === true && ("type" in node || "anyOf" in node)));
  return Object.fromEntries(entries.map(([key, value]) => [key, dropNullable(value)]));
}

/** Gives each streaming response its media type and item schema (see STREAMS). */
function describeStreams(paths: Document["paths"]): void {
  for (const stream of STREAMS) {
    const ok = paths[stream.path]?.[stream.method]?.responses?.["200"];
    if (!ok) continue;
    ok.description = stream.description;
    ok.content = stream.content;
  }
}

/**
 * A WebSocket route comes out under a method named `ws`, which OpenAPI has not: it is described as the GET
 * that opens it, answered 101. OpenAPI 3.1 cannot describe the messages that follow; its summary says what they are.
 */
function describeWebSockets(paths: Document["paths"]): void {
  for (const item of Object.values(paths)) {
    const upgrade = item.ws;
    if (!upgrade) continue;
    delete item.ws;
    const refusals = Object.fromEntries(Object.entries(upgrade.responses ?? {}).filter(([status]) => /^[45]/.test(status)));
    item.get ??= { ...upgrade, responses: { "101": { description: "Switching Protocols: the connection is now a WebSocket" }, ...refusals } };
  }
}

/** The generated paths and the named components, finished into a document that tools accept. */
function finishDocument(generated: { paths: object }, info: { title: string; version: string; description: string }): Document {
  const components = Object.fromEntries(Object.entries(COMPONENTS).map(([name, schema]) => [name, unwrapSchema(schema, undefined, "output", OPENAPI_VERSION) as Json]));
  const byJson = new Map(Object.entries(components).map(([name, schema]) => [JSON.stringify(schema), name]));
  const paths = referComponents(generated.paths, byJson) as Document["paths"];
  describeStreams(paths);
  describeWebSockets(paths);
  const named = Object.fromEntries(Object.entries(components).map(([name, schema]) => [name, referComponents(schema, byJson, schema)]));
  return dropNullable({
    openapi: OPENAPI_VERSION,
    info,
    servers: [
      {
        url: "http://{host}:{port}",
        description: "The manager, at SANDBOX_HOST:SANDBOX_PORT",
        variables: { host: { default: "127.0.0.1" }, port: { default: "7878" } },
      },
    ],
    security: [{ bearer: [] }],
    tags: TAGS,
    paths,
    components: { securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "The API token (bun run token)" } }, schemas: named },
  }) as Document;
}

/** GET `path`: the document, generated at the first request (createApp has registered every route by then). */
export function openApiDocument(path: string, info: { title: string; version: string; description: string }) {
  const plugin = new Elysia();
  let document: Document | undefined;
  return plugin.get(
    path,
    () => (document ??= finishDocument(toOpenAPISchema(plugin, { methods: ["options"] }, undefined, undefined, OPENAPI_VERSION), info)),
    { detail: { hide: true } },
  );
}
