// What happened to sessions, as VM work: deletions, toggles and a disabled server remove VMs (in the
// background); a lower cap is enforced at once; a newly chosen image is fetched before a command waits.
import type { ImageService } from "../images/image-service";
import type { Supervisor } from "../supervisor/supervisor";
import type { Notify } from "./lifecycle-events";

export function vmWorkFor(supervisor: Supervisor, images: Pick<ImageService, "prefetch">): Notify {
  return (event) => {
    switch (event.type) {
      case "sessions-deleted":
        return supervisor.removeInBackground(supervisor.namesForRoots(new Set(event.sessionIds)), "deleted");
      case "toggled-off":
        return supervisor.removeInBackground(supervisor.namesForRoots(new Set([event.rootSessionID])), "toggle-off");
      case "sandboxing-disabled":
        return supervisor.removeInBackground(supervisor.allNames(), "disabled");
      case "cap-changed":
        return void supervisor.enforceCap();
      case "image-chosen":
        return images.prefetch(event.choice);
    }
  };
}
