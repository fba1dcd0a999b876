// The local driver's terminal: a PTY made inside the VM by the guest's `script`, resize by stty in the VM.
import { describe, expect, test } from "bun:test";
import { ptsFromStat, terminalArgv } from "../../runtime/local/terminal";
import { expectNoLeaksAndCleanUp, makeLocalFixture } from "./local-target";
import { terminalSuite } from "./terminal-suite";

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

terminalSuite("local", { makeFixture: () => makeLocalFixture(), cleanUp: expectNoLeaksAndCleanUp });
