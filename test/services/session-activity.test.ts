// The sessions' activity on its own (a clock injected): which states hold a root's VM, for how long, and
// the events it publishes.
import { describe, expect, test } from "bun:test";
import type { PublishedEvent } from "../../app/events/sandbox-event";
import { createSessionActivity, REPORT_STALE_MS, RETRY_LIMIT } from "../../app/services/session-activity";

function make(maxHoldMs = 60 * 60_000) {
  const clock = { now: 1_000_000 };
  const published: PublishedEvent[] = [];
  const activity = createSessionActivity({ now: () => clock.now, publish: (event) => published.push(event), maxHoldMs: () => maxHoldMs });
  return { clock, published, activity };
}

describe("session activity", () => {
  test("busy → held by that session; idle → not held, and the idle time counts from the change", () => {
    const { clock, activity } = make();
    activity.report("ses_a", "ses_a", "busy", null);
    expect(activity.holdOf("ses_a")).toEqual({ held: true, busySessions: ["ses_a"], lastActiveAt: 1_000_000, reportedQuiescent: false });
    clock.now += 5_000;
    activity.report("ses_a", "ses_a", "idle", null);
    expect(activity.holdOf("ses_a")).toEqual({ held: false, busySessions: [], lastActiveAt: 1_005_000, reportedQuiescent: true });
  });

  test("a child's busy holds its root; another root is not held", () => {
    const { activity } = make();
    activity.report("ses_root", "ses_root", "idle", null);
    activity.report("ses_child", "ses_root", "busy", null);
    expect(activity.holdOf("ses_root").busySessions).toEqual(["ses_child"]);
    expect(activity.holdOf("ses_other").held).toBe(false);
  });

  test("waiting on a question or a permission → quiescent; retrying → working up to the limit, stuck past it", () => {
    const { activity } = make();
    for (const state of ["question", "permission"] as const) {
      activity.report("ses_a", "ses_a", state, null);
      expect(activity.holdOf("ses_a").held).toBe(false);
    }
    activity.report("ses_a", "ses_a", "retry", RETRY_LIMIT);
    expect(activity.holdOf("ses_a").held).toBe(true);
    activity.report("ses_a", "ses_a", "retry", RETRY_LIMIT + 1);
    expect(activity.holdOf("ses_a").held).toBe(false);
    expect(activity.viewOf("ses_a")?.holds).toBe(false); // the view says what the hold says, not "retry holds"
  });

  test("a heartbeat keeps `since` (the hold's start) and renews the report; no event for a repeat", () => {
    const { clock, activity, published } = make();
    activity.report("ses_a", "ses_a", "busy", null);
    clock.now += 30_000;
    activity.report("ses_a", "ses_a", "busy", null);
    expect(activity.viewOf("ses_a")).toEqual({ state: "busy", attempt: null, since: 1_000_000, reportedAt: 1_030_000, holds: true });
    expect(published.filter((e) => e.type === "activity")).toHaveLength(1);
  });

  test("no report for REPORT_STALE_MS → released as stale, said once; past maxHold → released as max-hold, said once", () => {
    const { clock, activity, published } = make(10 * 60_000);
    activity.report("ses_a", "ses_a", "busy", null);
    clock.now += REPORT_STALE_MS - 1;
    expect(activity.holdOf("ses_a").held).toBe(true);
    clock.now += 1;
    expect(activity.holdOf("ses_a").held).toBe(false);
    activity.holdOf("ses_a");
    expect(published.filter((e) => e.type === "activity" && e.released === "stale")).toHaveLength(1);
    activity.report("ses_a", "ses_a", "idle", null);
    activity.report("ses_a", "ses_a", "busy", null);
    for (let minute = 1; minute < 10; minute++) {
      clock.now += 60_000;
      activity.report("ses_a", "ses_a", "busy", null); // heartbeats keep coming
      expect(activity.holdOf("ses_a").held).toBe(true);
    }
    clock.now += 60_000;
    activity.report("ses_a", "ses_a", "busy", null);
    expect(activity.holdOf("ses_a").held).toBe(false);
    activity.holdOf("ses_a");
    expect(published.filter((e) => e.type === "activity" && e.released === "max-hold")).toHaveLength(1);
  });

  test("a deleted session's report goes: it holds nothing and is not listed", () => {
    const { activity } = make();
    activity.report("ses_a", "ses_a", "busy", null);
    activity.forget(["ses_a"]);
    expect(activity.viewOf("ses_a")).toBeNull();
    expect(activity.holdOf("ses_a").held).toBe(false);
  });
});
