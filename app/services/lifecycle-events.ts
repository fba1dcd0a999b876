// What the session services tell the VM side about, without knowing it exists.
import type { ImageChoice } from "../images/image-choice";

export type LifecycleEvent =
  | { type: "sessions-deleted"; sessionIds: string[] }
  | { type: "toggled-off"; rootSessionId: string }
  | { type: "sandboxing-disabled" }
  | { type: "cap-changed" }
  /** A setting or session now names this image: build or pull it in the background, before a command waits. */
  | { type: "image-chosen"; choice: ImageChoice };

export type Notify = (event: LifecycleEvent) => void;
