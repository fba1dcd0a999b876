// Compile-time contract of the SDK: checked by `tsc` in the test command, never run. Each line under an
// expect-error directive must fail to compile; if the SDK ever accepts it, tsc reports the unused directive.
import type { ErrorCode } from "../../app/errors";
import type { createEdenApi } from "../../sdk/eden";
import { createClient, SandboxError, SessionNotFoundError } from "../../sdk/index";

declare const client: ReturnType<typeof createClient>;
/** The raw Eden client (this repository only; the published SDK has the typed helpers above). */
declare const api: ReturnType<typeof createEdenApi>;

export async function sandboxViewIsFullyTyped() {
  const view = await client.sandbox.get("ses_x");
  const cpus: number = view.resources.effective.cpus;
  const source: "default" | "explicit" | "inherited" | "fork" = view.source;
  const toggledAt: number | null = view.toggledAt;
  const override: { cpus: number | null; memoryMib: number | null } | null = view.resources.override;
  const vmName: string = view.vmName;
  return [cpus, source, toggledAt, override, vmName];
}

export async function inputsAreChecked() {
  await client.sandbox.set("ses_x", { sandboxed: true, resources: { cpus: 2 } });
  await client.sandbox.set("ses_x", { resources: null });
  // @ts-expect-error cpus is a number, not a string
  await client.sandbox.set("ses_x", { resources: { cpus: "2" } });
  // @ts-expect-error there is no `sandboxd` field
  await client.sandbox.set("ses_x", { sandboxd: true });
  // @ts-expect-error directory is required
  await client.sessions.register({ id: "ses_x" });
  await client.settings.patch({ maxRunningVms: 3, cpus: null });
  // @ts-expect-error settings have no `colour`
  await client.settings.patch({ colour: "blue" });
}

export async function rawTreatyErrorsAreAUnionOfDeclaredStatuses() {
  const res = await api["session-sandbox"]({ id: "ses_x" }).put({ sandboxed: false });
  if (res.error) {
    const status: 400 | 401 | 403 | 404 | 409 | 413 | 415 | 422 = res.error.status;
    const code: ErrorCode = res.error.value.code;
    return [status, code];
  }
  const sandboxed: boolean = res.data.sandboxed;
  return sandboxed;
}

export function errorsAreClasses(error: unknown) {
  if (error instanceof SessionNotFoundError) {
    const status: number = error.status;
    const base: SandboxError = error;
    return [status, base.code];
  }
}

export async function managerCaIsTyped() {
  const ca = await client.ca.get();
  const fingerprint: string = ca.fingerprint;
  const notAfter: number = ca.notAfter;
  const rotated = await client.ca.rotate();
  const previous: string = rotated.previousFingerprint;
  // @ts-expect-error the API never answers the CA's key
  const key: string = ca.keyPem;
  const res = await api.ca.rotate.post();
  const status: 401 | 403 | 422 | 503 | undefined = res.error?.status;
  return [fingerprint, notAfter, previous, key, status];
}

export async function secretGrantsAreNamesOnly() {
  const configured = await client.secrets.list();
  const scope: "all" | "granted" = configured.secrets[0]!.scope;
  const hosts: string[] = configured.secrets[0]!.hosts;
  // @ts-expect-error the API never answers a secret's value
  const value: string = configured.secrets[0]!.value;
  const view = await client.secrets.grant("ses_x", ["API_TOKEN"]);
  const effective: string[] = view.secrets.effective;
  await client.sandbox.set("ses_x", { secrets: [] });
  // @ts-expect-error a grant names secrets; it never carries a value
  await client.sandbox.set("ses_x", { secrets: { API_TOKEN: "value" } });
  return [scope, hosts, value, effective];
}

export async function execHistoryAndCancelAreTyped() {
  await client.run("ses_x", { command: "true" }); // cwd is optional: the session's directory
  // @ts-expect-error a command is required
  await client.run("ses_x", { cwd: "/repo" });
  const { execs } = await client.execs.list("ses_x", { limit: 10 });
  const exitCode: number | null = execs[0]!.exitCode;
  const tail: string = execs[0]!.outputTail;
  const finishedAt: number | null = execs[0]!.finishedAt;
  // @ts-expect-error limit is a number
  await client.execs.list("ses_x", { limit: "10" });
  const cancelled = await client.execs.cancel("ses_x", "call-1");
  const callID: string = cancelled.callID;
  const res = await api.sessions({ id: "ses_x" }).execs({ callID: "call-1" }).cancel.post();
  const status: 400 | 401 | 404 | 409 | 422 | undefined = res.error?.status;
  return [exitCode, tail, finishedAt, callID, status];
}

export async function shellIsTyped() {
  const shell = client.shell("ses_x", { rows: 24, cols: 80, onOutput: (chunk: Uint8Array) => void chunk });
  shell.write("ls\n");
  shell.write(new Uint8Array([3]));
  shell.resize(30, 100);
  // @ts-expect-error the size is two numbers
  shell.resize("30x100");
  // @ts-expect-error output goes to onOutput, which is required
  client.shell("ses_x", { rows: 24 });
  const { exitCode, timedOut }: { exitCode: number; timedOut: boolean } = await shell.exited;
  return [exitCode, timedOut];
}

// The published SDK's types come from the OpenAPI document (sdk/generated/openapi.d.ts); these hold them
// to the server's own types, so neither can drift without tsc saying so.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export const errorCodesMatchTheServer: Same<ErrorCode, import("../../sdk/index").ErrorCode> = true;
export const execStreamEventsMatchTheServer: Same<import("../../app/routes/exec").ExecStreamEvent, import("../../sdk/index").ExecStreamEvent> = true;
export const eventsMatchTheServer: Same<import("../../app/events/event-bus").SandboxEvent, import("../../sdk/index").SandboxEvent> = true;
