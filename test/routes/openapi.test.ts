import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import SwaggerParser from "@apidevtools/swagger-parser";
import { mkdirSync, rmSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { makeTempDir, makeTestApp, TEST_TOKEN, type TestApp } from "../helpers";

const ROOT = join(import.meta.dir, "../..");
const BIN = join(ROOT, "node_modules/.bin");

type Operation = { operationId?: string; tags?: string[]; security?: unknown[]; requestBody?: { content: Record<string, unknown> }; responses: Record<string, { content?: Record<string, { schema?: unknown }> }> };
type Document = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> }; servers?: unknown[]; tags?: { name: string }[] };

/** A client written against the types openapi-typescript generates; type-checked by tsc, then run. */
const CLIENT = `
import createClient from "openapi-fetch";
import type { components, paths } from "./openapi";

type Session = components["schemas"]["Session"];
type ErrorCode = components["schemas"]["ErrorBody"]["code"];

export async function callTheApi(baseUrl: string, token: string, fetch: (request: Request) => Promise<Response>, directory: string) {
  const client = createClient<paths>({ baseUrl, fetch, headers: { authorization: \`Bearer \${token}\` } });
  const id = "ses_openapi_client";
  const registered = await client.POST("/api/sessions", { body: { id, directory } });
  const session: Session | undefined = registered.data;
  const got = await client.GET("/api/sessions/{id}", { params: { path: { id } } });
  const put = await client.PUT("/api/session-sandbox/{id}", { params: { path: { id } }, body: { sandboxed: true, resources: { cpus: 1 } } });
  const cpus: number | undefined = put.data?.resources.effective.cpus;
  const exec = await client.POST("/api/sessions/{id}/exec", { params: { path: { id } }, body: { command: "echo hi", cwd: directory }, parseAs: "stream" });
  const code: ErrorCode | undefined = exec.error?.code;
  const missing = await client.GET("/api/sessions/{id}", { params: { path: { id: "ses_nobody" } } });
  return {
    registered: { status: registered.response.status, id: session?.id },
    got: { status: got.response.status, rootSessionID: got.data?.rootSessionID },
    put: { status: put.response.status, cpus },
    exec: { status: exec.response.status, code },
    missing: { status: missing.response.status, code: missing.error?.code },
  };
}

// What the generated types refuse, so the check above is not vacuous.
export function refused(client: ReturnType<typeof createClient<paths>>) {
  // @ts-expect-error directory is required
  void client.POST("/api/sessions", { body: { id: "x" } });
  // @ts-expect-error cpus is an integer, not text
  void client.PUT("/api/session-sandbox/{id}", { params: { path: { id: "x" } }, body: { resources: { cpus: "2" } } });
  // @ts-expect-error not a network mode
  void client.PUT("/api/session-sandbox/{id}", { params: { path: { id: "x" } }, body: { network: { mode: "some" } } });
  // @ts-expect-error no such route
  void client.GET("/api/nowhere");
}
`;

const TSCONFIG = {
  compilerOptions: { target: "ESNext", module: "Preserve", moduleResolution: "bundler", lib: ["ESNext", "DOM"], types: [], strict: true, noEmit: true, skipLibCheck: true },
  files: ["client.ts"],
};

async function run(argv: string[], cwd: string): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  // Redocly would otherwise send telemetry and look for updates: tests stay on loopback.
  const env = { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" };
  const child = Bun.spawn(argv, { cwd, env, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { exitCode, stdout, stderr };
}

let t: TestApp;
let dir: string;
let doc: Document;

beforeAll(async () => {
  t = makeTestApp();
  dir = makeTempDir("ss-openapi-");
  doc = (await (await t.request("GET", "/api/openapi.json")).json()) as Document;
  await Bun.write(join(dir, "openapi.json"), JSON.stringify(doc));
});

afterAll(() => {
  t.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe("the OpenAPI document", () => {
  test("redocly lint (recommended rules) → 0 errors", async () => {
    const result = await run([join(BIN, "redocly"), "lint", "openapi.json", "--extends=recommended", "--format=json"], dir);
    const report = JSON.parse(result.stdout) as { totals: { errors: number }; problems: { ruleId: string; message: string; severity: string }[] };
    expect(report.problems.filter((problem) => problem.severity === "error")).toEqual([]);
    expect(report.totals.errors).toBe(0);
  });

  test("swagger-parser validate → valid", async () => {
    const validated = await SwaggerParser.validate(structuredClone(doc) as never);
    expect(Object.keys(validated.paths ?? {}).length).toBe(Object.keys(doc.paths).length);
  });

  test("every operation → a tag, a readable operationId; health needs no token", () => {
    const declared = new Set(doc.tags?.map((tag) => tag.name));
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        expect([path, method, operation.tags?.every((tag) => declared.has(tag))]).toEqual([path, method, true]);
        expect(operation.operationId).toMatch(/^[a-z][A-Za-z]+$/);
      }
    }
    expect(doc.paths["/api/health"]!.get!.security).toEqual([]);
    expect(doc.paths["/api/sessions"]!.post!.operationId).toBe("registerSession");
    expect(doc.servers?.length).toBeGreaterThan(0);
  });

  test("request bodies → application/json with their schema; no 3.0 nullable", () => {
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (operation.requestBody) expect([path, method, Object.keys(operation.requestBody.content)]).toEqual([path, method, ["application/json"]]);
      }
    }
    expect(doc.paths["/api/sessions"]!.post!.requestBody!.content["application/json"]).toEqual({ schema: { $ref: "#/components/schemas/RegisterSessionBody" } });
    expect(JSON.stringify(doc)).not.toContain('"nullable"');
  });

  test("streams → their media types with the schema of one item", () => {
    const exec = doc.paths["/api/sessions/{id}/exec"]!.post!.responses["200"]!.content!;
    expect(exec["application/x-ndjson"]).toEqual({ schema: { $ref: "#/components/schemas/ExecStreamEvent" } });
    expect(exec["text/plain"]).toEqual({ schema: { type: "string", description: expect.stringContaining("session-sandbox: exit=<code>") } });
    const events = doc.paths["/api/events"]!.get!.responses["200"]!.content!;
    expect(events).toEqual({ "text/event-stream": { schema: { $ref: "#/components/schemas/EventStreamFrame" } } });
    expect(Object.keys(doc.components.schemas)).toEqual(expect.arrayContaining(["ErrorBody", "Session", "SessionSandbox", "SandboxEvent", "ExecStreamEvent"]));
  });

  test("openapi-typescript + openapi-fetch → a client that type-checks and calls register, get, put and exec", async () => {
    const generated = await run(["bun", "--preload", join(ROOT, "test/fixtures/typescript-5-preload.ts"), join(BIN, "openapi-typescript"), "openapi.json", "-o", "openapi.d.ts"], dir);
    expect(generated.exitCode, generated.stderr).toBe(0);
    await Bun.write(join(dir, "client.ts"), CLIENT);
    await Bun.write(join(dir, "tsconfig.json"), JSON.stringify(TSCONFIG));
    symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
    const checked = await run([join(BIN, "tsc"), "-p", "tsconfig.json"], dir);
    expect(checked.stdout + checked.stderr).toBe("");
    expect(checked.exitCode).toBe(0);

    const project = join(dir, "project");
    mkdirSync(project);
    const { callTheApi } = (await import(join(dir, "client.ts"))) as { callTheApi: (...args: unknown[]) => Promise<unknown> };
    const results = await callTheApi("http://localhost", TEST_TOKEN, (request: Request) => t.app.handle(request), project);
    expect(results).toEqual({
      registered: { status: 201, id: "ses_openapi_client" },
      got: { status: 200, rootSessionID: "ses_openapi_client" },
      put: { status: 200, cpus: 1 },
      exec: { status: 503, code: "RUNTIME_FAILED" }, // this test app has no runtime
      missing: { status: 404, code: "SESSION_NOT_FOUND" },
    });
  });
});
