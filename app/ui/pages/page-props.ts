// What the dashboard shell (app.tsx) hands every page: a tick that changes with each event, and the live feed.
import type { EventSourceMessage } from "eventsource-parser";

export type PageProps = { tick: number; feed: EventSourceMessage[] };
