// /api/images: the guest images built or pulled on request — list, build or pull ahead of use, remove, prune.
import { Elysia, t } from "elysia";
import { Type } from "@sinclair/typebox";
import { jsonObjectBody } from "../http/json-body";
import { errors, ImageChoice, ImageView } from "../http/schemas";
import type { ImageService } from "../images/image-service";
import { sourceKeyOf } from "../images/image-choice";
import { ImageInvalidError } from "../errors";

export function imageRoutes(images: ImageService) {
  return new Elysia({ prefix: "/api/images", tags: ["images"] })
    .get("", () => ({ images: images.list() }), {
      response: { 200: t.Object({ images: t.Array(ImageView) }), ...errors(401, 403) },
      detail: { operationId: "listImages", summary: "Every guest image: the built-in one and those built or pulled on request, with status, size and users" },
    })
    .post(
      "",
      ({ body, set }) => {
        const choice = images.normalize(body);
        if (choice.kind === "dockerfile") {
          throw new ImageInvalidError("a Dockerfile image is built from a session's repository at that session's first command: choose it for a session (PATCH /api/sessions/:id/sandbox) or as the default for sessions (PATCH /api/settings/sandbox)");
        }
        images.prefetch(choice);
        set.status = 202;
        const key = sourceKeyOf(choice);
        return { image: images.list().find((view) => view.image === key) ?? null };
      },
      {
        parse: jsonObjectBody,
        body: ImageChoice,
        response: { 202: t.Object({ image: t.Nullable(ImageView) }), ...errors(400, 401, 403, 413, 415, 422) },
        detail: { operationId: "prepareImage", summary: "Build or pull an image now, in the background (progress: `image` events on /api/events); a ready one is reused" },
      },
    )
    .post(
      "/prune",
      ({ body }) => ({ ...images.prune({ olderThanMs: body.olderThanMs ?? 0, dryRun: body.dryRun ?? false }), dryRun: body.dryRun ?? false }),
      {
        parse: jsonObjectBody,
        body: t.Object(
          {
            olderThanMs: t.Optional(Type.Integer({ minimum: 0, description: "Only images last used at least this long ago; default 0" })),
            dryRun: t.Optional(t.Boolean()),
          },
          { additionalProperties: false },
        ),
        response: { 200: t.Object({ removed: t.Array(t.String()), freedBytes: Type.Integer(), dryRun: t.Boolean() }), ...errors(400, 401, 403, 413, 415, 422) },
        detail: { operationId: "pruneImages", summary: "Remove every image no setting, session or VM uses (the built-in image stays)" },
      },
    )
    .delete(
      "/:image",
      ({ params }) => {
        images.remove(params.image);
        return { removed: params.image };
      },
      {
        params: t.Object({ image: t.String({ minLength: 1, maxLength: 1024 }) }),
        response: { 200: t.Object({ removed: t.String() }), ...errors(401, 403, 404, 409) },
        detail: { operationId: "removeImage", summary: "Remove one cached image by its key (GET /api/images); refused while a setting, session or VM uses it" },
      },
    );
}
