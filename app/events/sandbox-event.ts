// What the event stream carries: the events the manager publishes (each with its monotonic ULID `id`),
// and the two notices a subscriber may get about the stream itself (a replay gap, an overflow).
import type { StopReason } from "../../workers/protocol";

export type VmEventStatus = "booting" | "running" | "stopped" | "evicted" | "removed" | "actor-crashed";

/** What a session's agent is doing, as its OpenCode plugin reports: busy or retry work; question and permission wait on the user. */
export type ActivityState = "busy" | "idle" | "retry" | "question" | "permission";

export type ImageEventPhase = "building" | "pulling" | "progress" | "ready" | "failed" | "removed";

/** What a publisher hands the bus; the bus adds the `id`. */
export type PublishedEvent =
  | { type: "vm"; vmName: string; rootSessionID: string | null; status: VmEventStatus; reason: StopReason | null; at: number }
  | {
      type: "exec";
      phase: "started" | "finished";
      vmName: string;
      rootSessionID: string;
      callID: string | null;
      exitCode: number | null;
      timedOut: boolean;
      cancelled: boolean;
      /** Killed by the kernel at the VM's memory limit (false while it runs). */
      oomKilled: boolean;
      at: number;
    }
  | {
      /** An image being built or pulled: progress lines while it works, then ready or failed (with the reason). */
      type: "image";
      /** What was asked, normalized: `default`, `recipe:<packages>` or `oci:<reference>`. */
      image: string;
      phase: ImageEventPhase;
      detail: string | null;
      at: number;
    }
  | {
      /** The egress proxy put a secret's value into a request that went out (the name, never the value). */
      type: "secret";
      phase: "substituted";
      name: string;
      /** The request's target host. */
      host: string;
      rootSessionID: string;
      vmName: string;
      at: number;
    }
  | {
      /** A forward of a port of a session's VM opened, or closed (asked to, or its VM stopped running). */
      type: "port";
      phase: "opened" | "closed";
      reason: "closed" | "vm-stopped" | null;
      rootSessionID: string;
      vmName: string;
      port: number;
      hostPort: number;
      url: string;
      at: number;
    }
  | {
      /** A session was registered (a repeat of an identical registration is not an event). */
      type: "session";
      phase: "registered";
      sessionID: string;
      parentID: string | null;
      forkOf: string | null;
      rootSessionID: string;
      directory: string;
      at: number;
    }
  | {
      /** A session was deleted: one event per session, descendants included. */
      type: "session";
      phase: "deleted";
      sessionID: string;
      at: number;
    }
  | {
      /** A root session's sandbox was switched on or off (a repeat of the same value is not an event). */
      type: "sandbox";
      rootSessionID: string;
      sandboxed: boolean;
      at: number;
    }
  | {
      /**
       * A session's agent changed what it does, as its OpenCode plugin reported (busy, idle, retry, waiting
       * on a question or a permission); or a working state stopped holding its VM (`released`: the plugin
       * went quiet, or it held for longer than maxHoldMinutes).
       */
      type: "activity";
      sessionID: string;
      rootSessionID: string;
      state: ActivityState;
      attempt: number | null;
      released: "stale" | "max-hold" | null;
      at: number;
    }
  | {
      /** The server-wide settings changed: the keys whose values changed. */
      type: "settings";
      keys: string[];
      at: number;
    };

/**
 * The stream could not replay from the id asked for (`Last-Event-ID` or `?since=`): the buffer no longer
 * reaches back to it, it is from before this manager started, or it is not an event id. Events after it
 * that are still buffered follow, then live ones.
 */
export type ReplayGapNotice = {
  type: "replay-gap";
  lastEventID: string;
  /** The oldest event still buffered, or null when none is. */
  oldestID: string | null;
  message: string;
  at: number;
};

/** This subscriber fell further behind than the buffer holds: `dropped` events are lost to it; it continues with the oldest buffered. */
type OverflowNotice = { type: "overflow"; dropped: number; message: string; at: number };

export type StreamNotice = ReplayGapNotice | OverflowNotice;

/** What a subscriber sees: published events with their ids, and notices about the stream (which have none). */
export type SandboxEvent = (PublishedEvent & { id: string }) | StreamNotice;
