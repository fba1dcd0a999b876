// The local driver's terminal: a PTY made inside the VM by the guest's `script`, resize by stty in the VM.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { TerminalHandle } from "../../runtime/driver";
import { ptsFromStat, terminalArgv } from "../../runtime/local/terminal";
import { expectNoLeaksAndCleanUp, makeLocalFixture, type LocalFixture } from "./local-target";

describe("local terminal units", () => {
  test("ptsFromStat → the pts of a PTY slave's tty_nr, nothing for other terminals", () => {
    const stat = (ttyNr: number) => `42 (ba sh) S 1 42 42 ${ttyNr} 42 4194560 0 0`;
    expect(ptsFromStat(stat((136 << 8) | 3))).toBe("/dev/pts/3");
    expect(ptsFromStat(stat((137 << 8) | 1))).toBe("/dev/pts/257");
    expect(ptsFromStat(stat((4 << 8) | 1))).toBeUndefined(); // /dev/tty1
    expect(ptsFromStat(stat(0))).toBeUndefined();
  });

  test("terminalArgv → script around the shell, sizes only as integers", () => {
    expect(terminalArgv(24, 80).slice(0, 4)).toEqual(["script", "-q", "-e", "-c"]);
    expect(terminalArgv(24, 80)[4]).toStartWith("stty rows 24 cols 80;");
    expect(() => terminalArgv(0, 80)).toThrow();
    expect(() => terminalArgv(1.5, 80)).toThrow();
  });
});

describe("local terminal (real VM)", () => {
  let fixture: LocalFixture;
  const name = `term-${Date.now().toString(36)}`;

  beforeAll(async () => {
    fixture = await makeLocalFixture();
    const spec = { name, image: fixture.image, cpus: 1, memoryMib: 256, mounts: [], tmpSizeMib: 32, volume: { name }, labels: { suite: "terminal" }, network: { mode: "none" as const } };
    await fixture.driver.create(spec);
  }, 120_000);

  afterAll(async () => {
    await fixture.driver.remove(name);
    await fixture.driver.removeVolume?.(name);
    expectNoLeaksAndCleanUp(fixture);
  });

  /** Output so far, and a wait for a pattern in it (no fixed sleeps). */
  function open(rows = 30, cols = 100): { terminal: TerminalHandle; text(): string; waitFor(pattern: RegExp): Promise<void> } {
    let text = "";
    const waiters: { pattern: RegExp; resolve(): void }[] = [];
    const decoder = new TextDecoder();
    const terminal = fixture.driver.openTerminal!(name, { cwd: "/", rows, cols, env: { TERM: "xterm" } }, (chunk) => {
      text += decoder.decode(chunk, { stream: true });
      for (const w of waiters.splice(0)) (w.pattern.test(text) ? w.resolve() : waiters.push(w));
    });
    const waitFor = (pattern: RegExp) => {
      if (pattern.test(text)) return Promise.resolve();
      const { promise, resolve } = Promise.withResolvers<void>();
      waiters.push({ pattern, resolve });
      return promise;
    };
    return { terminal, text: () => text, waitFor };
  }
  const keys = (s: string) => new TextEncoder().encode(s);

  test("a shell on a guest PTY: hostname, size, Ctrl-C, resize, exit code", async () => {
    const { terminal, waitFor } = open();
    terminal.write(keys("hostname; stty size; tty\n"));
    await waitFor(new RegExp(`${name}\\r\\n30 100\\r\\n/dev/pts/\\d+`));
    terminal.write(keys("sleep 100\n"));
    await waitFor(/sleep 100\r\n/);
    terminal.write(keys("\x03"));
    // bash drops the rest of a line whose command SIGINT killed: ask for the status on a line of its own.
    terminal.write(keys("echo after-$?\n"));
    await waitFor(/after-130/);
    await terminal.resize(50, 120);
    terminal.write(keys("stty size\n"));
    await waitFor(/50 120/);
    terminal.write(keys("exit 7\n"));
    expect(await terminal.result).toEqual({ exitCode: 7, timedOut: false, cancelled: false });
  }, 60_000);

  test("end of input → the shell ends (EOF on its terminal)", async () => {
    const { terminal } = open();
    terminal.closeInput();
    expect((await terminal.result).cancelled).toBe(false);
  }, 60_000);

  test("abort → the shell and what it runs are killed", async () => {
    const abort = new AbortController();
    let text = "";
    const terminal = fixture.driver.openTerminal!(name, { cwd: "/", rows: 24, cols: 80, signal: abort.signal }, (c) => void (text += new TextDecoder().decode(c)));
    terminal.write(keys("sleep 300\n"));
    while (!text.includes("sleep 300")) await Bun.sleep(20);
    abort.abort();
    expect((await terminal.result).cancelled).toBe(true);
  }, 60_000);
});
