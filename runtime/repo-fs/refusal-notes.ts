// What the repository view refused while a command ran, told on that command's stderr: the guest sees only
// "Permission denied", and the agent and the user need the path and the reason to do it another way (on
// the host). Read from the views' refusal logs (repo-fs checks.c): the lines appended since the command
// started, at most a few, the guest's paths shown escaped as the daemon wrote them.
import { closeSync, existsSync, openSync, readdirSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import { repoViewsDir } from "./repo-views";

const MAX_NOTES = 5;
const MAX_READ_BYTES = 64 * 1024;

/** Where each view's refusal log of the VM ends now. */
export function refusalLogEnds(stateDir: string, vmName: string): Map<string, number> {
  const dir = repoViewsDir(stateDir, vmName);
  const ends = new Map<string, number>();
  if (!existsSync(dir)) return ends;
  for (const name of readdirSync(dir).filter((entry) => entry.endsWith(".log"))) {
    try {
      ends.set(name, statSync(join(dir, name)).size);
    } catch {
      // Removed meanwhile (the VM stopped).
    }
  }
  return ends;
}

/** The stderr lines for what was refused after `since` (a log truncated meanwhile is read from its start). */
export function refusalNotes(stateDir: string, vmName: string, since: Map<string, number>): string[] {
  const dir = repoViewsDir(stateDir, vmName);
  const notes: string[] = [];
  let count = 0;
  for (const [name, end] of refusalLogEnds(stateDir, vmName)) {
    const from = (since.get(name) ?? 0) > end ? 0 : (since.get(name) ?? 0);
    if (end <= from) continue;
    const length = Math.min(end - from, MAX_READ_BYTES);
    const buffer = Buffer.alloc(length);
    let fd: number | undefined;
    try {
      fd = openSync(join(dir, name), "r");
      readSync(fd, buffer, 0, length, from);
    } catch {
      continue;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
    for (const line of buffer.toString("utf8").split("\n").filter(Boolean)) {
      let entry: { op?: string; path?: string; reason?: string };
      try {
        entry = JSON.parse(line);
      } catch {
        continue; // a line cut by the read limit
      }
      count++;
      if (notes.length < MAX_NOTES) notes.push(`session-sandbox: the repository refused ${entry.op} ${JSON.stringify(entry.path)}: ${entry.reason}\n`);
    }
  }
  if (count > MAX_NOTES) notes.push(`session-sandbox: … and ${count - MAX_NOTES} more refused changes in the repository (docs/repository-guard.md)\n`);
  return notes;
}
