// What the session services tell the VM side about, without knowing it exists.
export type LifecycleEvent =
  | { type: "sessions-deleted"; sessionIds: string[] }
  | { type: "toggled-off"; rootSessionId: string }
  | { type: "sandboxing-disabled" }
  | { type: "cap-changed" };

export type Notify = (event: LifecycleEvent) => void;
