// Ctrl-C (SIGINT) and SIGTERM as an AbortSignal, for the CLI's streaming commands: they stop cleanly
// (closing their stream, which cancels a remote command) instead of dying mid-write.

/** Runs `body` with a signal that SIGINT or SIGTERM aborts; the handlers go when it settles. */
export async function untilInterrupted<T>(body: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const interrupt = new AbortController();
  const onSignal = () => interrupt.abort();
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    return await body(interrupt.signal);
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}
