// The activity protocol's one shared number: how often a plugin repeats the report of a session that stays
// busy (plugin/activity.ts sends at this pace; the manager, app/services/session-activity.ts, counts a
// working session not heard of for three of them as quiescent).
export const ACTIVITY_HEARTBEAT_MS = 60_000;
