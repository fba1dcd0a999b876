import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig, parseMemoryMib, resolveDataDir } from "../app/config";

describe("config", () => {
  test("memory sizes: 4G, 512M and plain MiB → MiB", () => {
    expect(parseMemoryMib("4G")).toBe(4096);
    expect(parseMemoryMib("512M")).toBe(512);
    expect(parseMemoryMib("768")).toBe(768);
    expect(parseMemoryMib("2g")).toBe(2048);
  });

  test("junk memory sizes → ConfigError with the accepted forms", () => {
    for (const bad of ["", "abc", "-1", "1.5G", "0", "4T"]) {
      expect(() => parseMemoryMib(bad)).toThrow(/4G, 512M|positive/);
    }
  });

  test("env → config; bad numbers name the variable", () => {
    const config = loadConfig({ SANDBOX_DATA_DIR: "/x", SANDBOX_CPUS: "2", SANDBOX_MEMORY: "1G", SANDBOX_EXEC_TIMEOUT_MS: "5000" });
    expect(config).toMatchObject({ dataDir: "/x", envCpus: 2, envMemoryMib: 1024, envExecTimeoutMs: 5000, port: 7878 });
    expect(() => loadConfig({ SANDBOX_CPUS: "1.5" })).toThrow(ConfigError);
    expect(() => loadConfig({ SANDBOX_MEMORY: "lots" })).toThrow(/SANDBOX_MEMORY/);
    expect(() => loadConfig({ SANDBOX_LOG_LEVEL: "chatty" })).toThrow(/SANDBOX_LOG_LEVEL/);
  });

  test("SANDBOX_EXEC_AGENT: on by default, off switches it off, anything else names the variable and the choices", () => {
    expect(loadConfig({}).execAgent).toBe(true);
    expect(loadConfig({ SANDBOX_EXEC_AGENT: "off" }).execAgent).toBe(false);
    expect(() => loadConfig({ SANDBOX_EXEC_AGENT: "no" })).toThrow(/SANDBOX_EXEC_AGENT.*on \(the default\) or off/);
  });

  test("SANDBOX_SHELL_TICKET_TTL_MS: unset → the service's default; a value in 1–300 s taken; outside → names the variable and the range", () => {
    expect(loadConfig({ SANDBOX_DATA_DIR: "/x" }).shellTicketTtlMs).toBeUndefined();
    expect(loadConfig({ SANDBOX_DATA_DIR: "/x", SANDBOX_SHELL_TICKET_TTL_MS: "2000" }).shellTicketTtlMs).toBe(2000);
    expect(() => loadConfig({ SANDBOX_DATA_DIR: "/x", SANDBOX_SHELL_TICKET_TTL_MS: "10" })).toThrow(/SANDBOX_SHELL_TICKET_TTL_MS.*1000/);
  });

  test("data dir defaults under the user's state dir", () => {
    expect(resolveDataDir({ HOME: "/home/u" })).toBe("/home/u/.local/state/session-sandbox");
    expect(resolveDataDir({ XDG_STATE_HOME: "/s" })).toBe("/s/session-sandbox");
  });
});
