// The SDK's public names for the manager's request and answer shapes. Each is read from
// generated/openapi.d.ts (the server's route schemas, through its OpenAPI document), never from the
// server's code: a consumer of the published SDK type-checks it with nothing of the manager installed.
// createClient (client.ts) is annotated with these, so tsc holds the server's Eden types to them.
import type { components, operations } from "./generated/openapi";

type Schemas = components["schemas"];
type Operation = keyof operations;
type Responses<Op extends Operation> = operations[Op]["responses"];
type JsonContent<Part> = Part extends { content: { "application/json": infer Body } } ? Body : never;

/** The JSON answer of an operation's success status (200, 201 or 202). */
export type Answer<Op extends Operation> = JsonContent<Responses<Op>[Extract<keyof Responses<Op>, 200 | 201 | 202>]>;
/** The JSON body an operation takes. */
export type RequestBody<Op extends Operation> = JsonContent<NonNullable<operations[Op]["requestBody"]>>;

export type ErrorCode = Schemas["ErrorBody"]["code"];
export type ErrorBody = Schemas["ErrorBody"];
export type Health = Schemas["Health"];
export type RegisterSessionBody = Schemas["RegisterSessionBody"];
export type Session = Schemas["Session"];
export type ListedSession = Schemas["ListedSession"];
export type DeletedSessions = Schemas["DeletedSessions"];
export type Resources = Schemas["Resources"];
export type NetworkPolicy = Schemas["NetworkPolicy"];
export type ImageChoice = Schemas["ImageChoice"];
export type SessionSandbox = Schemas["SessionSandbox"];
export type SessionSandboxUpdate = Schemas["SessionSandboxUpdate"];
export type ConfiguredSecret = Schemas["ConfiguredSecret"];
export type SandboxSettings = Schemas["SandboxSettings"];
export type SandboxSettingsPatch = Schemas["SandboxSettingsPatch"];
export type ExecHistoryEntry = Schemas["ExecHistoryEntry"];
/** One line of a command's NDJSON stream (POST /api/sessions/:id/exec), its output base64. */
export type ExecStreamEvent = Schemas["ExecStreamEvent"];
/** One event of GET /api/events: VMs, commands, images, secrets, sessions, toggles, settings. */
export type SandboxEvent = Schemas["SandboxEvent"];
export type Vm = Schemas["Vm"];
export type ImageView = Schemas["ImageView"];
export type ManagerCaView = Schemas["ManagerCaView"];
export type RotatedCa = Schemas["RotatedCa"];
export type SessionList = Answer<"listSessions">;
export type ActivityReport = RequestBody<"reportSessionActivity">;
export type SessionActivity = Answer<"reportSessionActivity">;
export type VmList = Answer<"listVms">;
export type ImageList = Answer<"listImages">;
export type SecretList = Answer<"listSecrets">;
export type SettingDefaults = Answer<"getSettingDefaults">;
export type ExecHistory = Answer<"listExecs">;
export type CancelledExecs = Answer<"cancelExec">;
export type SweepResult = Answer<"sweepVms">;
export type RemovedVm = Answer<"removeVm">;
export type VmStats = Answer<"getVmStats">;
export type AllVmStats = Answer<"listVmStats">;
export type PreparedImage = Answer<"prepareImage">;
export type PrunedImages = Answer<"pruneImages">;
export type RemovedImage = Answer<"removeImage">;
export type DoctorReport = Answer<"getDoctorReport">;
export type UserList = Answer<"listUsers">;
export type AddedUser = Answer<"addUser">;
export type RemovedUser = Answer<"removeUser">;
