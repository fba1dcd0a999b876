// The msb driver's lifecycle process handling against a FAKE msb (no microVM boots on this machine):
// env and stdin of the child, the already-exists retry, error mapping, idempotent stop/remove.
import { afterAll, describe, expect, test } from "bun:test";
import { RuntimeError } from "../../runtime/driver";
import { buildCreateArgs, MsbDriver } from "../../runtime/msb";
import { inspectJsonFor, makeFakeMsb, removeFakeMsbs, sampleSpec } from "./fake-msb-harness";

afterAll(removeFakeMsbs);

const spec = sampleSpec();
const notFound = { stderr: `error: sandbox not found: ${spec.name}\n`, exitCode: 1 };
const listed = (names: string[]) => ({ stdout: JSON.stringify(names.map((name) => ({ name, status: "Running", image: "/srv/rootfs", created_at: null }))) });

describe("fake msb: create", () => {
  test("create → runs the built argv with MSB_BACKEND=local, MSB_HOME, no host secrets and stdin at EOF", async () => {
    const fake = makeFakeMsb();
    fake.setScenario({ create: [{}], inspect: [{ stdout: inspectJsonFor(spec) }] });
    const info = await fake.driver({ msbHome: "/var/lib/msb-test" }).create(spec);
    expect(info.status).toBe("running");
    const [create] = fake.calls();
    expect(create?.args).toEqual(buildCreateArgs(spec));
    expect(create?.env).toEqual({ MSB_BACKEND: "local", MSB_HOME: "/var/lib/msb-test", NO_COLOR: "1", SECRET_TOKEN: undefined });
    expect(create?.stdinEof).toBe(true);
  });

  test("create says already exists but list does not show it → retried once with --replace", async () => {
    const fake = makeFakeMsb();
    const exists = { stderr: `error: sandbox already exists: sandbox '${spec.name}' already exists; remove it\n`, exitCode: 1 };
    fake.setScenario({ create: [exists, {}], list: [listed(["other"])], inspect: [{ stdout: inspectJsonFor(spec) }] });
    await fake.driver().create(spec);
    const creates = fake.calls().filter((c) => c.key === "create");
    expect(creates.map((c) => c.args)).toEqual([buildCreateArgs(spec), buildCreateArgs(spec, { replace: true })]);
  });

  test("create says already exists and list shows it → ALREADY_EXISTS, no retry", async () => {
    const fake = makeFakeMsb();
    fake.setScenario({ create: [{ stderr: `error: sandbox already exists: sandbox '${spec.name}' already exists\n`, exitCode: 1 }], list: [listed([spec.name])] });
    const error = await fake.driver().create(spec).catch((e) => e);
    expect(error).toBeInstanceOf(RuntimeError);
    expect(error.code).toBe("ALREADY_EXISTS");
    expect(fake.calls().filter((c) => c.key === "create")).toHaveLength(1);
  });

  test("create whose VM does not boot → UNAVAILABLE carrying msb's reason", async () => {
    const fake = makeFakeMsb();
    const boot = `error: failed to start "${spec.name}"\n  → other: sandbox process exited (exit status: 1) before agent relay became available\n`;
    fake.setScenario({ create: [{ stderr: boot, exitCode: 1 }] });
    const error = await fake.driver().create(spec).catch((e) => e);
    expect(error.code).toBe("UNAVAILABLE");
    expect(error.message).toContain("before agent relay became available");
  });

  test("MSB_PATH in the host env → that binary runs", async () => {
    const fake = makeFakeMsb();
    fake.setScenario({ list: [{ stdout: "" }] });
    const driver = new MsbDriver({ hostEnv: { MSB_PATH: fake.binary, PATH: process.env.PATH } });
    expect(driver.binary).toEqual({ path: fake.binary, source: "MSB_PATH" });
    expect(await driver.ping()).toBe(true);
  });

  test("msb binary missing → create throws UNAVAILABLE and ping is false", async () => {
    const driver = new MsbDriver({ msbPath: "/nonexistent/msb", hostEnv: {} });
    expect(await driver.ping()).toBe(false);
    const error = await driver.create(spec).catch((e) => e);
    expect(error.code).toBe("UNAVAILABLE");
  });
});

describe("fake msb: ensure", () => {
  test("existing VM that does not attest → recreated with --replace, mismatches reported", async () => {
    const fake = makeFakeMsb();
    fake.setScenario({ inspect: [{ stdout: inspectJsonFor({ ...spec, cpus: 1 }) }, { stdout: inspectJsonFor(spec) }], create: [{}] });
    const result = await fake.driver().ensure(spec);
    expect(result.action).toBe("recreated");
    expect(result.mismatches).toEqual(["cpus: expected 2, found 1"]);
    expect(fake.calls().find((c) => c.key === "create")?.args).toEqual(buildCreateArgs(spec, { replace: true }));
  });

  test("existing stopped VM that attests → started, not recreated", async () => {
    const fake = makeFakeMsb();
    fake.setScenario({ inspect: [{ stdout: inspectJsonFor(spec, "Stopped") }], start: [{}] });
    const result = await fake.driver().ensure(spec);
    expect(result.action).toBe("started");
    expect(result.info.status).toBe("running");
    expect(fake.calls().map((c) => c.key)).toEqual(["inspect", "start"]);
  });
});

describe("fake msb: lifecycle", () => {
  test("remove of a missing VM → done after one inspect", async () => {
    const fake = makeFakeMsb();
    fake.setScenario({ inspect: [notFound] });
    await fake.driver().remove(spec.name);
    expect(fake.calls().map((c) => c.key)).toEqual(["inspect"]);
  });

  test("remove of a running VM → force stop, volume removed before the sandbox record", async () => {
    const fake = makeFakeMsb();
    fake.setScenario({ inspect: [{ stdout: inspectJsonFor(spec) }], stop: [{}], "volume remove": [{ stderr: `error: volume not found: ${spec.volume.name}\n`, exitCode: 1 }], remove: [notFound] });
    await fake.driver().remove(spec.name);
    expect(fake.calls().map((c) => c.args)).toEqual([
      ["inspect", spec.name, "--format=json"],
      ["stop", spec.name, "--force"],
      ["volume", "remove", spec.volume.name],
      ["remove", spec.name, "--force"],
    ]);
  });

  test("stop of a missing VM → done; start of a running VM → done; start of a missing VM → NOT_FOUND", async () => {
    const fake = makeFakeMsb();
    fake.setScenario({ stop: [notFound], start: [{ stderr: `error: sandbox still running: cannot start sandbox '${spec.name}': already running\n`, exitCode: 1 }, notFound] });
    const driver = fake.driver();
    await driver.stop(spec.name);
    await driver.start(spec.name);
    const error = await driver.start(spec.name).catch((e) => e);
    expect(error.code).toBe("NOT_FOUND");
  });

  test("inspect printing something that is not JSON → FAILED naming the command", async () => {
    const fake = makeFakeMsb();
    fake.setScenario({ inspect: [{ stdout: "Name: box\nStatus: Running\n" }] });
    const error = await fake.driver().inspect(spec.name).catch((e) => e);
    expect(error.code).toBe("FAILED");
    expect(error.message).toContain("msb inspect did not print JSON");
  });

  test("list by label → entries without a name skipped, each listed VM inspected", async () => {
    const fake = makeFakeMsb();
    const entries = [{ name: spec.name, status: "Running", extra: { nested: true } }, { status: "Stopped" }, 42];
    fake.setScenario({ list: [{ stdout: JSON.stringify(entries) }], inspect: [{ stdout: inspectJsonFor(spec) }] });
    const infos = await fake.driver().list({ "ocm.owner": "session-sandbox" });
    expect(infos.map((i) => i.name)).toEqual([spec.name]);
    expect(fake.calls()[0]?.args).toEqual(["list", "--format=json", "--label=ocm.owner=session-sandbox"]);
  });

  test("trace hook → sees every command with its exit code", async () => {
    const fake = makeFakeMsb();
    fake.setScenario({ stop: [notFound] });
    const events: { args: string[]; exitCode: number | null }[] = [];
    await fake.driver({ trace: (e) => events.push(e) }).stop(spec.name);
    expect(events.map((e) => [e.args[0], e.exitCode])).toEqual([["stop", 1]]);
  });
});
