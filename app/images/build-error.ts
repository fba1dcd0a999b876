// A Dockerfile build that could not make its image: an ImagePullError, so the image service reports it like
// a failed pull (a failed image row, an event, 503 IMAGE_UNAVAILABLE with the reason).
import type { StepSource } from "./dockerfile";
import { ImagePullError } from "./oci-pull";

export class ImageBuildError extends ImagePullError {}

/** The build's failure at one line of the Dockerfile: `Dockerfile line 7 (RUN make): <reason>`. */
export function stepFailure(source: StepSource, reason: string): ImageBuildError {
  return new ImageBuildError(`Dockerfile line ${source.line} (${source.text.slice(0, 80)}): ${reason}`);
}
