// One JSON log line per event (VM lifecycle at info, commands at debug: they are many).
import type { Logger } from "../log";
import type { EventBus } from "./event-bus";

export function logEvents(events: EventBus, log: Logger): void {
  const stop = new AbortController();
  void (async () => {
    for await (const event of events.subscribe(stop.signal)) {
      if (event.type === "vm") log.info(`vm ${event.status}`, { ...event });
      else if (event.type === "image") (event.phase === "progress" ? log.debug : log.info)(`image ${event.phase}`, { ...event });
      else if (event.type === "secret" || event.type === "exec") log.debug(`${event.type} ${event.phase}`, { ...event });
      else if (event.type === "overflow") log.warn("event log fell behind", { ...event });
      else if (event.type !== "replay-gap") log.info(`${event.type} event`, { ...event });
    }
  })();
}
