// Who chose each image (by source key): the settings' default, and each root session with an override.
// The image list shows it, and an image still chosen is not pruned.
import type { Services } from "../services/index";
import { sourceKeyOf } from "./image-choice";

export function imageChoosers(services: Pick<Services, "settings" | "sessions" | "sessionSandbox">): Map<string, string[]> {
  const choosers = new Map<string, string[]>();
  const add = (key: string, who: string) => choosers.set(key, [...(choosers.get(key) ?? []), who]);
  add(sourceKeyOf(services.settings.get().image), "the settings' default");
  for (const session of services.sessions.list()) {
    if (session.parentID !== null) continue;
    const override = services.sessionSandbox.get(session.id).image.override;
    if (override) add(sourceKeyOf(override), `session ${session.id}`);
  }
  return choosers;
}
