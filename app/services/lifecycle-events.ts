// What the session services tell the VM side about, without knowing it exists.
import type { ImageChoice } from "../images/image-choice";

export type LifecycleEvent =
  | { type: "sessions-deleted"; sessionIds: string[] }
  | { type: "toggled-off"; rootSessionID: string }
  /** The root's effective docker setting went from on to off: its daemon and data go. */
  | { type: "docker-off"; rootSessionID: string }
  | { type: "sandboxing-disabled" }
  | { type: "cap-changed" }
  /** The root's effective network policy changed (its override was set or cleared). */
  | { type: "network-changed"; rootSessionID: string }
  /** The settings' default network policy changed: every root without an override follows it. */
  | { type: "default-network-changed" }
  /** The secret names the root's commands may have changed (a grant or a revocation). */
  | { type: "secrets-changed"; rootSessionID: string }
  /** forwardGitCredentials was switched: every root's git credentials changed. */
  | { type: "git-credentials-changed" }
  /** A setting or session now names this image: build or pull it in the background, before a command waits. */
  | { type: "image-chosen"; choice: ImageChoice }
  /** A new session (not an identical repeat of a registration). */
  | { type: "session-registered"; session: { id: string; parentID: string | null; forkOf: string | null; directory: string; rootSessionID: string } }
  /** A root's sandbox was switched on or off (not a repeat of the value it had). */
  | { type: "sandbox-toggled"; rootSessionID: string; sandboxed: boolean }
  /** Settings whose values changed. */
  | { type: "settings-changed"; keys: string[] };

export type Notify = (event: LifecycleEvent) => void;
