// Schemas of what the two streaming routes send, for the OpenAPI document: the NDJSON lines of
// POST /api/sessions/:id/exec and the frames of GET /api/events. The TypeScript types stay where they are
// used; the checks at the bottom fail the typecheck when a type and its schema drift apart.
import { Type, type Static, type TSchema } from "@sinclair/typebox";
import type { SandboxEvent as SandboxEventType } from "../events/event-bus";
import type { ExecStreamEvent as ExecStreamEventType } from "../routes/exec";

const at = Type.Integer({ description: "When it happened, Unix epoch milliseconds" });
const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const literals = <const L extends string[]>(...values: L) => Type.Unsafe<L[number]>({ type: "string", enum: values });

const OOM_KILLED = "The kernel killed the command at the VM's memory limit (raise it: PUT /api/session-sandbox/:id with resources.memoryMib)";

const StopReason = literals("idle", "suspend", "cap", "toggle-off", "deleted", "spec-change", "crash", "sweep", "manual", "disabled", "recovery", "shutdown");

/** One line of the exec stream (application/x-ndjson). */
export const ExecStreamEvent = Type.Union(
  [
    Type.Object({ type: Type.Literal("started"), vmName: Type.String(), callID: nullable(Type.String()) }),
    Type.Object({ type: literals("stdout", "stderr"), data: Type.String({ contentEncoding: "base64", description: "A chunk of output, base64" }) }),
    Type.Object({ type: Type.Literal("exit"), exitCode: Type.Integer(), timedOut: Type.Boolean(), cancelled: Type.Boolean(), oomKilled: Type.Boolean({ description: OOM_KILLED }) }),
    Type.Object({ type: Type.Literal("error"), code: Type.String(), message: Type.String() }, { description: "The runtime failed mid-command" }),
    Type.Object({ type: Type.Literal("heartbeat") }, { description: "Sent every 15 s while the command is quiet; skip it" }),
  ],
  { description: "One line of the exec stream: started, then stdout/stderr chunks, then exit (or error); heartbeats in between" },
);

const id = Type.String({ description: "The event's id, a monotonic ULID: send it back as Last-Event-ID (or ?since=) to resume after it" });
const notice = { description: "About the stream itself; it has no id" };

/** The JSON in the `data:` field of an event frame. */
export const SandboxEvent = Type.Union(
  [
    Type.Object({
      id,
      type: Type.Literal("vm"),
      vmName: Type.String(),
      rootSessionID: nullable(Type.String()),
      status: literals("booting", "running", "stopped", "evicted", "removed", "actor-crashed"),
      reason: nullable(StopReason),
      at,
    }),
    Type.Object({
      id,
      type: Type.Literal("exec"),
      phase: literals("started", "finished"),
      vmName: Type.String(),
      rootSessionID: Type.String(),
      callID: nullable(Type.String()),
      exitCode: nullable(Type.Integer()),
      timedOut: Type.Boolean(),
      cancelled: Type.Boolean(),
      oomKilled: Type.Boolean({ description: OOM_KILLED }),
      at,
    }),
    Type.Object(
      {
        id,
        type: Type.Literal("image"),
        image: Type.String({ description: "What was asked, normalized: default, recipe:<packages> or oci:<reference>" }),
        phase: literals("building", "pulling", "progress", "ready", "failed", "removed"),
        detail: nullable(Type.String()),
        at,
      },
      { description: "An image being built or pulled: progress lines while it works, then ready or failed (with the reason)" },
    ),
    Type.Object(
      {
        id,
        type: Type.Literal("secret"),
        phase: Type.Literal("substituted"),
        name: Type.String(),
        host: Type.String({ description: "The request's target host" }),
        rootSessionID: Type.String(),
        vmName: Type.String(),
        at,
      },
      { description: "The egress proxy put a secret's value into a request that went out (the name, never the value)" },
    ),
    Type.Object(
      {
        id,
        type: Type.Literal("port"),
        phase: literals("opened", "closed"),
        reason: nullable(literals("closed", "vm-stopped")),
        rootSessionID: Type.String(),
        vmName: Type.String(),
        port: Type.Integer({ description: "The port inside the VM" }),
        hostPort: Type.Integer({ description: "The port on the manager's host" }),
        url: Type.String(),
        at,
      },
      { description: "A forward of a port of a session's VM opened, or closed (asked to, or its VM stopped running)" },
    ),
    Type.Object(
      {
        id,
        type: Type.Literal("session"),
        phase: Type.Literal("registered"),
        sessionID: Type.String(),
        parentID: nullable(Type.String()),
        forkOf: nullable(Type.String()),
        rootSessionID: Type.String(),
        directory: Type.String(),
        at,
      },
      { description: "A session was registered (an identical repeat is not an event)" },
    ),
    Type.Object({ id, type: Type.Literal("session"), phase: Type.Literal("deleted"), sessionID: Type.String(), at }, { description: "A session was deleted: one event per session, descendants included" }),
    Type.Object({ id, type: Type.Literal("sandbox"), rootSessionID: Type.String(), sandboxed: Type.Boolean(), at }, { description: "A root session's sandbox was switched on or off" }),
    Type.Object(
      {
        id,
        type: Type.Literal("activity"),
        sessionID: Type.String(),
        rootSessionID: Type.String(),
        state: literals("busy", "idle", "retry", "question", "permission"),
        attempt: nullable(Type.Integer({ description: "The retry's attempt (state retry)" })),
        released: nullable(literals("stale", "max-hold")),
        at,
      },
      {
        description:
          "A session's agent changed what it does, as its OpenCode plugin reported; or a working state stopped holding its VM (released: stale = the plugin stopped reporting, max-hold = longer than maxHoldMinutes)",
      },
    ),
    Type.Object({ id, type: Type.Literal("settings"), keys: Type.Array(Type.String()), at }, { description: "The server-wide settings changed: the keys whose values changed" }),
    Type.Object(
      { type: Type.Literal("replay-gap"), lastEventID: Type.String(), oldestID: nullable(Type.String()), message: Type.String(), at },
      { description: `${notice.description}: the buffer does not reach back to the Last-Event-ID (or ?since=) asked for; buffered events after it follow` },
    ),
    Type.Object(
      { type: Type.Literal("overflow"), dropped: Type.Integer(), message: Type.String(), at },
      { description: `${notice.description}: this client fell further behind than the buffer holds; \`dropped\` events are lost to it` },
    ),
  ],
  { description: "What happened to a VM, a command, an image, a secret, a port, a session, a sandbox, a session's activity or the settings, with its id; or a notice about the stream" },
);

/** One frame of the event stream (text/event-stream), field by field, as OpenAPI 3.2's itemSchema would say. */
export const EventStreamFrame = Type.Object(
  {
    id: Type.Optional(Type.String({ description: "The event's id (notices have none): a reconnecting client sends the last one as Last-Event-ID" })),
    event: literals("vm", "exec", "image", "secret", "port", "session", "sandbox", "activity", "settings", "replay-gap", "overflow"),
    data: Type.String({ contentMediaType: "application/json", contentSchema: Type.Ref("#/components/schemas/SandboxEvent"), description: "The event, one line of JSON" }),
    retry: Type.Optional(Type.Integer({ description: "How long a client waits before it reconnects, ms (the stream's first frame)" })),
  },
  { description: "One frame of the stream: `id:`, `event:`, `data:` lines and a blank line; `: comment` lines are heartbeats" },
);

// Each schema describes exactly its type, assignable both ways. An error here means the type changed:
// change its schema above to match.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const execStreamEventSchemaMatchesItsType: Same<Static<typeof ExecStreamEvent>, ExecStreamEventType> = true;
const sandboxEventSchemaMatchesItsType: Same<Static<typeof SandboxEvent>, SandboxEventType> = true;
