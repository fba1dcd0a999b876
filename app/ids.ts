// The one place ids are minted: monotonic ULIDs (sortable by creation, strictly increasing within this
// process even inside one millisecond), for exec history rows, call ids and events.
import { monotonicFactory } from "ulid";

const next = monotonicFactory();

/** A new ULID, greater than every one this process minted before. */
export function newId(): string {
  return next();
}
