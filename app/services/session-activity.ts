// What each session's agent is doing, as its OpenCode plugin reports it from OpenCode's own events: busy,
// idle, retrying (with the attempt), or waiting on the user (a question or a permission). The supervisor
// asks it whether a root session's VM must be held, and since when the root was last active.
//
// Kept in memory: a manager that restarts knows no activity until the plugin reports again, which it does
// at every change and, while a session stays busy, every ACTIVITY_HEARTBEAT_MS. Until then the root counts
// as quiescent, as it did before activity existed (unused from its last command).
import type { ActivityState, PublishedEvent } from "../events/sandbox-event";
import { ACTIVITY_HEARTBEAT_MS } from "../../sdk/activity";

export type { ActivityState };

export type Activity = {
  sessionID: string;
  rootSessionID: string;
  state: ActivityState;
  /** The retry's attempt (state "retry"), else null. */
  attempt: number | null;
  /** When the state last changed. */
  since: number;
  /** When the plugin last reported it (a change or a heartbeat). */
  reportedAt: number;
};

/** A busy session not reported for this long counts as quiescent: its OpenCode closed or crashed mid-turn. */
export const REPORT_STALE_MS = 3 * ACTIVITY_HEARTBEAT_MS;
/** A session retrying more often than this is stuck (a provider down, a key revoked), not working. */
export const RETRY_LIMIT = 3;

/** A session's activity as the API shows it: `holds` is the manager's own verdict (before holdWhileBusy). */
export type ActivityView = Pick<Activity, "state" | "attempt" | "since" | "reportedAt"> & { holds: boolean };

/** Whether a root's VM must be kept, and why not when it need not. */
export type RootHold = {
  /** A session of the root is working: its VM is neither removed nor evicted (with holdWhileBusy). */
  held: boolean;
  /** The sessions that hold it. */
  busySessions: string[];
  /** The last change of any of the root's sessions (null: none reported): the idle time counts from here too. */
  lastActiveAt: number | null;
  /** The plugin reported at least one of the root's sessions as quiescent (idle, waiting on the user, stuck). */
  reportedQuiescent: boolean;
};

type Deps = {
  now: () => number;
  /** Where its events go (the manager's event bus). */
  publish: (event: PublishedEvent) => void;
  /** The longest a session may hold its VM in one busy stretch (settings maxHoldMinutes). */
  maxHoldMs: () => number;
};

/** Why a busy report no longer holds: its plugin went quiet, or it has held for longer than the maximum. */
type Release = "stale" | "max-hold";

export function createSessionActivity({ now, publish, maxHoldMs }: Deps) {
  const sessions = new Map<string, Activity>();
  /** Releases already announced, one per busy stretch (session and its `since`). */
  const announced = new Set<string>();

  function report(sessionID: string, rootSessionID: string, state: ActivityState, attempt: number | null): void {
    const at = now();
    const before = sessions.get(sessionID);
    const changed = !before || before.state !== state || before.attempt !== attempt || before.rootSessionID !== rootSessionID;
    const activity: Activity = { sessionID, rootSessionID, state, attempt: state === "retry" ? attempt : null, since: changed ? at : before.since, reportedAt: at };
    sessions.set(sessionID, activity);
    if (changed) publish({ type: "activity", sessionID, rootSessionID, state, attempt: activity.attempt, released: null, at });
  }

  /** Why a working state no longer holds the VM, or null while it does (idle and waiting states never hold). */
  function releaseOf(activity: Activity, at: number): Release | null {
    if (at - activity.reportedAt >= REPORT_STALE_MS) return "stale";
    if (at - activity.since >= maxHoldMs()) return "max-hold";
    return null;
  }

  function working(activity: Activity): boolean {
    return activity.state === "busy" || (activity.state === "retry" && (activity.attempt ?? 0) <= RETRY_LIMIT);
  }

  /** Whether the session holds its root's VM now (holdWhileBusy aside): working, and released by neither bound. */
  function holds(activity: Activity): boolean {
    return working(activity) && releaseOf(activity, now()) === null;
  }

  /** The root's hold. A working state found released is announced here, once (an `activity` event with `released`). */
  function holdOf(rootSessionID: string | null): RootHold {
    const at = now();
    const busySessions: string[] = [];
    let lastActiveAt: number | null = null;
    let reportedQuiescent = false;
    for (const activity of sessions.values()) {
      if (activity.rootSessionID !== rootSessionID) continue;
      lastActiveAt = Math.max(lastActiveAt ?? 0, activity.since);
      if (!working(activity)) {
        reportedQuiescent = true;
        continue;
      }
      const release = releaseOf(activity, at);
      if (release === null) {
        busySessions.push(activity.sessionID);
        continue;
      }
      reportedQuiescent = true;
      const key = `${activity.sessionID}@${activity.since}`;
      if (!announced.has(key)) {
        announced.add(key);
        publish({ type: "activity", sessionID: activity.sessionID, rootSessionID, state: activity.state, attempt: activity.attempt, released: release, at });
      }
    }
    return { held: busySessions.length > 0, busySessions, lastActiveAt, reportedQuiescent: reportedQuiescent && busySessions.length === 0 };
  }

  return {
    report,
    holdOf,
    /** The session's last report as the API shows it, with whether it holds the VM now; null when its plugin never reported (or it was deleted). */
    viewOf(sessionID: string): ActivityView | null {
      const activity = sessions.get(sessionID);
      return activity ? { state: activity.state, attempt: activity.attempt, since: activity.since, reportedAt: activity.reportedAt, holds: holds(activity) } : null;
    },
    /** Deleted sessions: their reports go (and hold nothing any more). */
    forget(sessionIDs: string[]): void {
      for (const id of sessionIDs) sessions.delete(id);
      for (const key of announced) if (!sessions.has(key.slice(0, key.lastIndexOf("@")))) announced.delete(key);
    },
  };
}

export type SessionActivity = ReturnType<typeof createSessionActivity>;
