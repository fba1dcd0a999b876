// The SDK's public surface: the typed client, its errors, the event and exec streams, the arbiter, and
// the request and answer types. Nothing here imports the server: the types come from the OpenAPI
// document (api-types.ts), so the published package (packages/sdk) needs none of the manager's code.
export { createClient, type ClientOptions, type SandboxClient } from "./client";
export * from "./errors";
export * from "./arbiter";
export type * from "./api-types";
export type { ShellConnection, ShellExit, ShellOptions } from "./shell";
export type { ExecEvent, ExecRequest, RunResult } from "./exec";
export { cpuPercentBetween } from "./cpu-percent";
export type { FileWritten, OpenedFile, ReadFileOptions, WriteFileOptions } from "./files";
export type { BackgroundStarted, ProcessList, ProcessLogEvent } from "./processes";
export type { EventStreamOptions } from "./events";
export { eventIdAt } from "./events";
