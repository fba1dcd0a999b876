// A guest that prints far more than anyone reads, and clients that read it at different speeds: what the
// output-flood test asserts and bench/output-flood.ts measures. The manager runs as its own process, so its
// resident memory (VmRSS) is its own.
import { readFileSync } from "node:fs";
import { EXEC_TEXT_STATUS_PREFIX } from "../../app/http/exec-text";

export const GIB = 1024 * 1024 * 1024;
export const MIB = 1024 * 1024;

/** The process's resident memory now (bytes), or 0 once it is gone. */
export function rssOf(pid: number): number {
  try {
    const kib = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kib ? Number(kib) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Samples a process's RSS every `everyMs` until stopped; `peak` is the highest seen. */
export function watchRss(pid: number, everyMs = 50): { peak(): number; stop(): number } {
  let peak = rssOf(pid);
  const timer = setInterval(() => (peak = Math.max(peak, rssOf(pid))), everyMs);
  return {
    peak: () => peak,
    stop() {
      clearInterval(timer);
      return peak;
    },
  };
}

/** `bytes` of zeros on stdout, from the guest's own head(1): nothing on the way is asked to buffer it. */
export const floodCommand = (bytes: number) => `head -c ${bytes} /dev/zero`;

/**
 * How a client reads the exec's text stream: `pace` is awaited between reads (nothing: as fast as it can).
 * Counts what came, keeps only the tail (the status line), never the output itself.
 */
export type Reading = { bytes: number; tail: string; seconds: number };

export async function execText(url: string, token: string, session: string, command: string, pace?: (readSoFar: number) => Promise<void>, signal?: AbortSignal): Promise<Reading> {
  const started = performance.now();
  const response = await fetch(`${url}/api/sessions/${session}/exec`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "text/plain" },
    body: JSON.stringify({ command }),
    signal,
  });
  if (!response.ok) throw new Error(`exec refused: ${response.status} ${await response.text()}`);
  const reader = response.body!.getReader();
  let bytes = 0;
  let tail = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    tail = (tail + Buffer.from(value.subarray(Math.max(0, value.byteLength - 200))).toString("latin1")).slice(-200);
    if (pace) await pace(bytes);
  }
  return { bytes, tail, seconds: (performance.now() - started) / 1000 };
}

/** The command's own output in a reading: everything before the status line (and the newline put before it). */
export function outputBytes(reading: Reading): number {
  const at = reading.tail.lastIndexOf(EXEC_TEXT_STATUS_PREFIX);
  if (at < 0) return -1;
  const status = reading.tail.slice(at);
  const newlineBefore = reading.tail[at - 1] === "\n" ? 1 : 0;
  return reading.bytes - Buffer.byteLength(status, "latin1") - newlineBefore;
}
