// Runs a build or pull tool, handing each line it prints to `onLine` as it comes (the progress people
// see in events and `bun run images`), and keeping the whole output for the error message.

export type Line = (line: string) => void;

/** Enough of the end of the output for an error message; a chatty apt run is not kept whole. */
const MAX_KEPT_OUTPUT = 64 * 1024;

export type RunResult = { code: number; stdout: string; stderr: string };

/**
 * Every tool runs in its own PID and mount namespace whose first process dies with the manager: a build
 * or pull cut by a crash (kill -9) leaves no process behind and no mount (a chroot's /proc), so the next
 * start only has to remove the partial directory. setpriv's parent-death signal reaches unshare; unshare's
 * --kill-child reaches the namespace's init, whose death ends everything inside it.
 */
export function diesWithManager(argv: string[]): string[] {
  return ["setpriv", "--pdeathsig", "KILL", "--", "unshare", "--fork", "--pid", "--mount", "--kill-child", "--", ...argv];
}

export type RunOptions = {
  timeoutMs?: number;
  env?: Record<string, string | undefined>;
  /** Aborting it kills the tool and everything it started (its namespace's init dies, see diesWithManager). */
  signal?: AbortSignal;
};

export async function runWithLines(argv: string[], onLine: Line | undefined, options: RunOptions = {}): Promise<RunResult> {
  const { timeoutMs, env, signal } = options;
  const proc = Bun.spawn(diesWithManager(argv), {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    ...(env ? { env } : {}),
    ...(timeoutMs ? { timeout: timeoutMs, killSignal: "SIGKILL" as const } : {}),
  });
  const kill = () => proc.kill("SIGKILL");
  signal?.addEventListener("abort", kill, { once: true });
  if (signal?.aborted) kill();
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    let text = "";
    let pending = "";
    for await (const bytes of stream) {
      const chunk = decoder.decode(bytes, { stream: true });
      text = (text + chunk).slice(-MAX_KEPT_OUTPUT);
      pending += chunk;
      const lines = pending.split(/\r?\n/);
      pending = lines.pop() ?? "";
      for (const line of lines) if (line.trim()) onLine?.(line.trim());
    }
    if (pending.trim()) onLine?.(pending.trim());
    return text;
  };
  try {
    const [stdout, stderr, code] = await Promise.all([collect(proc.stdout), collect(proc.stderr), proc.exited]);
    return { code, stdout, stderr };
  } finally {
    signal?.removeEventListener("abort", kill);
  }
}
