// Read-before-write, per session, as OpenCode's tool descriptions promise: `write` or `edit` of an
// existing file needs a `read` of it in the same session first, and fails if the file changed since
// (compared by content hash, taken where the file lives). Our own writes count as a fresh read.
// OPENCODE_DISABLE_FILETIME_CHECK=true turns the rule off, as it did in OpenCode.
type ReadStamp = { sha256: string; readAtMs: number };

export type ReadStamps = ReturnType<typeof createReadStamps>;

export function createReadStamps(env: Record<string, string | undefined> = process.env) {
  const bySession = new Map<string, Map<string, ReadStamp>>();
  const disabled = env.OPENCODE_DISABLE_FILETIME_CHECK === "true" || env.OPENCODE_DISABLE_FILETIME_CHECK === "1";

  function record(sessionID: string, path: string, sha256: string): void {
    let files = bySession.get(sessionID);
    if (!files) bySession.set(sessionID, (files = new Map()));
    files.set(path, { sha256, readAtMs: Date.now() });
  }

  /** Throws OpenCode's messages when `path` (existing, now `current`) was not read or changed since. */
  function assertFresh(sessionID: string, path: string, current: { sha256: string; mtimeSeconds: number }): void {
    if (disabled) return;
    const stamp = bySession.get(sessionID)?.get(path);
    if (!stamp) throw new Error(`You must read file ${path} before overwriting it. Use the Read tool first`);
    if (stamp.sha256 === current.sha256) return;
    throw new Error(
      `File ${path} has been modified since it was last read.\nLast modification: ${new Date(current.mtimeSeconds * 1000).toISOString()}\nLast read: ${new Date(stamp.readAtMs).toISOString()}\n\nPlease read the file again before modifying it.`,
    );
  }

  return { record, assertFresh, forget: (sessionID: string) => void bySession.delete(sessionID) };
}
