// Bounds what an image build or pull writes, while it writes. A 15 MB image can unpack to terabytes (a
// layer of zeros compresses ~1000:1), so a size learned after the unpack comes too late: the disk is full by
// then. The watch reads the file system's free space every POLL_MS (one statfs, cheap at any tree size);
// only once it has dropped by the limit since the start does it measure the work directory itself (du), as
// other writers on the same disk may account for the drop. Past the limit, `onExceeded` runs once: the
// caller kills the tool and removes its partial directory.
import { statfsSync } from "node:fs";
import { runWithLines, type Line, type RunOptions, type RunResult } from "./run-with-lines";

const POLL_MS = 200;
/** Other writers on the disk must not make du run at every poll once the directory is near its limit. */
const MIN_STEP_BYTES = 16 * 1024 * 1024;

/**
 * The bytes of the files under `dir` (du: apparent sizes, no links followed, one file system), or undefined
 * when unknown. What an image's size is everywhere: its sizeBytes once ready, and its limit while it grows.
 * The total du prints counts even when it also complained (a file an unpack renamed while du walked).
 */
export async function directoryBytes(dir: string): Promise<number | undefined> {
  const proc = Bun.spawn(["du", "-sxb", dir], { stdin: "ignore", stdout: "pipe", stderr: "ignore" });
  const [text] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  const bytes = Number.parseInt(text, 10);
  return Number.isFinite(bytes) ? bytes : undefined;
}

function freeBytes(path: string): number | undefined {
  try {
    const stats = statfsSync(path);
    return stats.bfree * stats.bsize;
  } catch {
    return undefined;
  }
}

type SizeWatch = {
  /** The most the work directory was measured at (bytes; 0 when it was never measured). */
  measuredPeak(): number;
  stop(): void;
};

/**
 * Watches `dir` (which may not exist yet; `fsPath`, an existing path on the same file system, is what statfs
 * reads) for writes past `limitBytes`.
 * Exported so a test drives the watch directly.
 */
export function watchImageSize(dir: string, fsPath: string, limitBytes: number, onExceeded: (bytes: number) => void): SizeWatch {
  const startFree = freeBytes(fsPath);
  let stopped = false;
  let peak = 0;
  /**
   * The drop at which du runs next: first the limit; after a measure below it, the drop then plus what the
   * directory still had before the limit (it cannot pass the limit before the disk lost that much more).
   */
  let nextCheckAt = limitBytes;
  let measuring = false;
  const timer = setInterval(async () => {
    if (stopped || measuring || startFree === undefined) return;
    const now = freeBytes(fsPath);
    if (now === undefined || startFree - now < nextCheckAt) return;
    measuring = true;
    try {
      const bytes = await directoryBytes(dir);
      if (bytes === undefined || stopped) return;
      peak = Math.max(peak, bytes);
      if (bytes > limitBytes) {
        stopped = true;
        clearInterval(timer);
        onExceeded(bytes);
      } else nextCheckAt = startFree - now + Math.max(limitBytes - bytes, MIN_STEP_BYTES);
    } finally {
      measuring = false;
    }
  }, POLL_MS);
  return {
    measuredPeak: () => peak,
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}

/** A build or pull tool wrote past the limit under the directory it was watched on; it was killed. */
export class ImageSizeExceeded extends Error {
  constructor(
    readonly limitBytes: number,
    readonly reachedBytes: number,
  ) {
    super(`wrote ${reachedBytes} bytes, past the limit of ${limitBytes}`);
  }
}

/**
 * Runs a build or pull tool (runWithLines) while watching what it writes under `dir`: past `limitBytes` the
 * tool is killed and ImageSizeExceeded thrown. The caller removes the partial directory, as for any failure.
 */
export async function runWithinSize(
  argv: string[],
  onLine: Line | undefined,
  bounds: { dir: string; fsPath: string; limitBytes: number },
  options: Omit<RunOptions, "signal"> = {},
): Promise<RunResult> {
  const kill = new AbortController();
  let reached: number | undefined;
  const watch = watchImageSize(bounds.dir, bounds.fsPath, bounds.limitBytes, (bytes) => {
    reached = bytes;
    kill.abort();
  });
  try {
    const result = await runWithLines(argv, onLine, { ...options, signal: kill.signal });
    if (reached !== undefined) throw new ImageSizeExceeded(bounds.limitBytes, reached);
    return result;
  } finally {
    watch.stop();
  }
}
