// OpenCode's file tools (read, write, edit, glob, grep, apply_patch), replaced by tools of the same
// names that run where the session's shell runs: the session's VM when it is sandboxed, the winning
// provider's sandbox, or the host (same scripts, local `sh`) when nobody sandboxes it.
import type { SessionTracker } from "../sessions";
import { createApplyPatchTool } from "./apply-patch-tool";
import { createEditTool } from "./edit-tool";
import { createGlobTool } from "./glob-tool";
import { createGrepTool } from "./grep-tool";
import { createReadTool } from "./read-tool";
import { createReadStamps } from "./read-stamps";
import { createWriteTool } from "./write-tool";

export function createFileTools(sessions: SessionTracker) {
  const stamps = createReadStamps();
  return {
    tools: {
      read: createReadTool(sessions, stamps),
      write: createWriteTool(sessions, stamps),
      edit: createEditTool(sessions, stamps),
      glob: createGlobTool(sessions),
      grep: createGrepTool(sessions),
      apply_patch: createApplyPatchTool(sessions, stamps),
    },
    /** Drops a deleted session's read stamps. */
    forget: stamps.forget,
  };
}
