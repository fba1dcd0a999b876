// The admin scripts' pure parts, in-process: parsing what an operator types, formatting, tables,
// color rules, and finding the manager's URL.
import { describe, expect, test } from "bun:test";
import { managerUrl } from "../../cli/connection";
import { UsageError } from "../../cli/errors";
import { formatBytes, formatDuration, formatMib, isoTime, timeAgo } from "../../cli/format";
import { colorEnabled, lineWidth, makeOutput, renderTable, wrapWords } from "../../cli/output";
import { parseDurationMs, parseSizeMib } from "../../cli/parse";
import { parseAssignments } from "../../cli/commands/settings";
import { vmsTable } from "../../cli/commands/vms";

const usageError = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    return error as UsageError;
  }
  throw new Error("expected a UsageError");
};

describe("parse", () => {
  test("durations → ms; a bare number other than 0 → refused", () => {
    expect(["0", "30m", "2h", "7d", "1.5h", "90s", "1w", "250ms"].map((text) => parseDurationMs(text, "d"))).toEqual([0, 1_800_000, 7_200_000, 604_800_000, 5_400_000, 90_000, 604_800_000, 250]);
    for (const bad of ["7", "", "-1d", "3 days", "1e3s"]) expect(usageError(() => parseDurationMs(bad, "--older-than"))).toBeInstanceOf(UsageError);
  });

  test("sizes → MiB: 2G, 512M, 1.5GiB, plain MiB; fractions of a MiB and zero → refused", () => {
    expect(["2G", "512M", "1.5GiB", "1536", "4g", "256MB"].map((text) => parseSizeMib(text, "m"))).toEqual([2048, 512, 1536, 1536, 4096, 256]);
    for (const bad of ["0", "1.5M", "2T", "lots", "-1G"]) expect(usageError(() => parseSizeMib(bad, "--memory")).message).toContain("is not a size");
  });

  test("settings assignments → a typed patch (booleans, units, null)", () => {
    expect(parseAssignments(["enabled=off", "cpus=2", "memoryMib=2G", "idleStopMinutes=1h", "execTimeoutMs=90s", "maxRunningVms=null"])).toEqual({
      enabled: false,
      cpus: 2,
      memoryMib: 2048,
      idleStopMinutes: 60,
      execTimeoutMs: 90_000,
      maxRunningVms: null,
    });
    expect(parseAssignments(["idleStopMinutes=45", "execTimeoutMs=5000", "defaultForNewSessions=default"])).toEqual({ idleStopMinutes: 45, execTimeoutMs: 5000, defaultForNewSessions: null });
    expect(parseAssignments(["network=allowlist:api.github.com,*.example.com:443", "cpus=default"])).toEqual({ network: { mode: "allowlist", allow: ["api.github.com", "*.example.com:443"] }, cpus: null });
    expect(parseAssignments(["network=all"])).toEqual({ network: { mode: "all" } });
    expect(parseAssignments(['network={"mode":"allowlist","allow":[]}'])).toEqual({ network: { mode: "allowlist", allow: [] } });
    expect(usageError(() => parseAssignments(["network=some"])).fix).toBe("write none, all, or allowlist:api.github.com,*.example.com");
    expect(usageError(() => parseAssignments([])).message).toContain("needs at least one key=value");
    expect(usageError(() => parseAssignments(["cpus"])).message).toBe('"cpus" has no value');
    expect(usageError(() => parseAssignments(["cpus=1", "cpus=2"])).message).toBe("cpus is given twice");
    expect(usageError(() => parseAssignments(["idleStopMinutes=90s"])).message).toBe('idleStopMinutes "90s" is not a whole number of minutes');
    expect(usageError(() => parseAssignments(["enabled=maybe"])).fix).toBe("write true or false (on/off, yes/no)");
  });
});

describe("format", () => {
  test("times: relative for a person, ISO to the second for a pipe", () => {
    const now = Date.parse("2026-01-02T03:04:05.678Z");
    expect([0, 45_000, 180_000, 5 * 3_600_000, 47 * 3_600_000, 3 * 86_400_000].map((ago) => timeAgo(now - ago, now))).toEqual(["just now", "45s ago", "3m ago", "5h ago", "47h ago", "3d ago"]);
    expect(isoTime(now)).toBe("2026-01-02T03:04:05Z");
  });

  test("sizes and durations", () => {
    expect([128, 512, 1024, 1536, 2048, 1100].map(formatMib)).toEqual(["128M", "512M", "1G", "1.5G", "2G", "1.1G"]);
    expect([0, 90_000, 120_000, 7_200_000, 604_800_000, 1500].map(formatDuration)).toEqual(["0", "90s", "2m", "2h", "7d", "1500ms"]);
  });
});

describe("output", () => {
  test("colors: NO_COLOR wins, FORCE_COLOR forces, else only a terminal that is not dumb", () => {
    expect(colorEnabled({}, true)).toBe(true);
    expect(colorEnabled({}, false)).toBe(false);
    expect(colorEnabled({ NO_COLOR: "1" }, true)).toBe(false);
    expect(colorEnabled({ NO_COLOR: "", TERM: "xterm" }, true)).toBe(true);
    expect(colorEnabled({ FORCE_COLOR: "1" }, false)).toBe(true);
    expect(colorEnabled({ FORCE_COLOR: "1", NO_COLOR: "1" }, false)).toBe(false);
    expect(colorEnabled({ TERM: "dumb" }, true)).toBe(false);
  });

  test("wrapping: at spaces within the width, continuations indented, a too-wide word whole on a line of its own", () => {
    expect(wrapWords("one two three four", { width: 12, indent: 2 })).toBe("one two\n  three four");
    expect(wrapWords("a /a/very/long/path b", { width: 12, firstWidth: 4, indent: 2 })).toBe("a\n  /a/very/long/path\n  b");
    expect(wrapWords("/first/word/too/wide x", { width: 30, firstWidth: 10, indent: 4 })).toBe("\n    /first/word/too/wide x");
    expect(wrapWords("short", { width: 80, indent: 4 })).toBe("short");
    expect(lineWidth({}, { isTTY: true, columns: 90 })).toBe(90);
    expect(lineWidth({ COLUMNS: "70" }, { isTTY: false })).toBe(70);
    expect(lineWidth({}, { isTTY: false })).toBeUndefined();
  });

  test("bytes: binary units, one decimal below 10", () => {
    expect([0, 512, 1536, 10 * 1024, 268435456, 2 ** 31, 3.5 * 2 ** 30].map(formatBytes)).toEqual(["0B", "512B", "1.5KiB", "10KiB", "256MiB", "2GiB", "3.5GiB"]);
  });

  test("tables: aligned by visible width (colors and wide characters), right-aligned numbers, no trailing spaces", () => {
    const out = makeOutput({ json: false, env: { FORCE_COLOR: "1" }, isTty: true, write: () => {} });
    const text = renderTable([{ header: "NAME" }, { header: "N", align: "right" }, { header: "NOTE" }], [[out.paint.green("a"), "7", ""], ["漢字", "12", "x"]], out.paint);
    expect(Bun.stripANSI(text)).toBe("NAME   N  NOTE\na      7\n漢字  12  x");
  });

  test("vms table: stop reasons, a VM without a spec or a session, colored status on a terminal", () => {
    const now = Date.parse("2026-01-02T03:04:05Z");
    const vm = { name: "ocm-session-aaaaaaaaaaaa", rootSessionID: "ses_1", status: "stopped" as const, spec: { cpus: 2, memoryMib: 1536, tmpSizeMib: 384, mounts: ["/r"], image: "/img" }, createdAt: now - 7_200_000, lastUsedAt: now - 600_000, runningExecs: 0, lastStopReason: "idle" };
    const orphan = { ...vm, name: "ocm-session-bbbbbbbbbbbb", rootSessionID: null, status: "running" as const, spec: null, createdAt: null, lastStopReason: null };
    const tty = { ...makeOutput({ json: false, env: {}, isTty: true, write: () => {} }), now };
    const text = vmsTable([vm, orphan], tty);
    expect(text).toContain("\x1b[32mrunning\x1b[39m");
    expect(Bun.stripANSI(text)).toBe(
      [
        "NAME                      SESSION  STATUS   EXECS  CPUS  MEMORY  CREATED  LAST USED  LAST STOP REASON",
        "ocm-session-aaaaaaaaaaaa  ses_1    stopped      0     2    1.5G  2h ago   10m ago    idle",
        "ocm-session-bbbbbbbbbbbb  -        running      0     -       -  -        10m ago    -",
      ].join("\n"),
    );
  });
});

describe("connection", () => {
  test("SANDBOX_URL wins; else SANDBOX_HOST/SANDBOX_PORT with a wildcard host meaning loopback", () => {
    expect(managerUrl({})).toBe("http://127.0.0.1:7878");
    expect(managerUrl({ SANDBOX_URL: "http://127.0.0.1:9000/", SANDBOX_PORT: "1" })).toBe("http://127.0.0.1:9000");
    expect(managerUrl({ SANDBOX_HOST: "0.0.0.0", SANDBOX_PORT: "8000" })).toBe("http://127.0.0.1:8000");
    expect(managerUrl({ SANDBOX_HOST: "::1" })).toBe("http://[::1]:7878");
    expect(usageError(() => managerUrl({ SANDBOX_PORT: "0" })).message).toContain("SANDBOX_PORT");
    expect(usageError(() => managerUrl({ SANDBOX_URL: "ftp://x" })).message).toContain("not an http(s) URL");
  });
});
