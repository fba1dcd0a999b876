// `bun run images`: the guest images — list, build or pull one (with progress), set a session's image,
// remove one, prune the unused.
import type { SandboxClient } from "../../sdk/index";
import { executeCommand, expectPositionals, reportFailure } from "../frame";
import { EXIT, UsageError, type ExitCode } from "../errors";
import { formatMib, isoOrNull, timeCell } from "../format";
import { describeImageChoice, IMAGE_SYNTAX, parseImageArgument, type ImageChoice } from "../image-arg";
import { renderTable, type Output } from "../output";
import { parseDurationMs } from "../parse";
import { sessionSandboxJson, sessionSandboxView } from "../session-view";

type Image = Awaited<ReturnType<SandboxClient["images"]["list"]>>["images"][number];

const POLL_MS = 1_000;

function sizeCell(bytes: number | null): string {
  return bytes === null ? "-" : formatMib(Math.max(1, Math.round(bytes / (1024 * 1024))));
}

function statusCell(image: Image, out: Output): string {
  if (image.status === "ready") return out.paint.green("ready");
  if (image.status === "failed") return out.paint.red("failed");
  return out.paint.yellow(image.status);
}

function imagesTable(images: Image[], out: Output): string {
  const rows = images.map((image) => [
    out.paint.cyan(image.image === "default" ? "builtin" : describeImageChoice(image.choice)),
    statusCell(image, out),
    sizeCell(image.sizeBytes),
    image.usedBy.length === 0 ? out.paint.dim("unused") : image.usedBy.join(", "),
    timeCell(image.lastUsedAt, out),
    image.detail ?? image.digest ?? "",
  ]);
  return renderTable([{ header: "IMAGE" }, { header: "STATUS" }, { header: "SIZE" }, { header: "USED BY" }, { header: "LAST USED" }, { header: "DETAIL" }], rows, out.paint);
}

function imageJson(image: Image) {
  return { ...image, createdAt: isoOrNull(image.createdAt), lastUsedAt: isoOrNull(image.lastUsedAt) };
}

/** The list's key of a choice (what `rm` takes): the manager's own normalization, so ask it. */
async function findImage(client: SandboxClient, key: string): Promise<Image | undefined> {
  return (await client.images.list()).images.find((image) => image.image === key);
}

/** Starts the build or pull and follows it until ready or failed, printing each new progress line. */
async function pull(client: SandboxClient, choice: ImageChoice, out: Output): Promise<ExitCode> {
  const started = await client.images.pull(choice);
  const key = started.image?.image ?? (choice.kind === "recipe" && choice.packages.length === 0 ? "default" : undefined);
  let last: string | null = null;
  for (;;) {
    const image = key ? await findImage(client, key) : undefined;
    if (image && image.detail !== last && image.detail && !out.json) out.line(`${image.status}: ${image.detail}`);
    last = image?.detail ?? last;
    if (image && (image.status === "ready" || image.status === "failed")) {
      if (out.json) out.printJson(imageJson(image));
      else if (image.status === "ready") out.line(`${out.paint.green("ready")}: ${image.path ?? ""} ${image.sizeBytes !== null ? `(${sizeCell(image.sizeBytes)})` : ""}`);
      if (image.status === "failed") {
        reportFailure("images", { exitCode: EXIT.failed, code: "IMAGE_UNAVAILABLE", message: image.detail ?? "the build or pull failed", fix: "fix the cause above, then run the same command again" });
        return EXIT.failed;
      }
      return EXIT.ok;
    }
    await Bun.sleep(POLL_MS);
  }
}

export function run(argv: string[]): Promise<number> {
  return executeCommand(
    {
      name: "images",
      help: `usage: bun run images [--json]
       bun run images pull <image> [--json]
       bun run images set <session> <image> | --clear [--json]
       bun run images rm <image> [--json]
       bun run images prune [--older-than DURATION] [--dry-run] [--json]

Lists the guest images: the built-in one and those built or pulled on request, with status, size, who
uses them and the latest progress line. <image> is ${IMAGE_SYNTAX}.
pull builds or pulls an image now and follows its progress (a ready one is reused; an OCI reference is
cached by digest). set gives a root session its own image (--clear: back to the settings' default, set
with \`bun run settings set image=<image>\`); its VM is recreated at its next command, keeping /home/agent.
rm removes one cached image (refused while used); prune removes every unused one, or only those last used
at least DURATION ago (30m, 2h, 7d). The built-in image is never removed.`,
      options: { clear: { type: "boolean" }, "older-than": { type: "string" }, "dry-run": { type: "boolean" } },
    },
    argv,
    async ({ positionals, values, out, client }) => {
      const [action, ...rest] = positionals;
      switch (action) {
        case undefined: {
          const { images } = await client.images.list();
          return out.json ? out.printJson({ images: images.map(imageJson) }) : out.line(imagesTable(images, out));
        }
        case "pull": {
          const [text] = expectPositionals(rest, ["image"]) as [string];
          return pull(client, parseImageArgument(text, "image"), out);
        }
        case "set": {
          const [session, text] = expectPositionals(rest, ["session", "image"], values.clear ? 1 : 0);
          if (values.clear && text !== undefined) throw new UsageError("--clear cannot be combined with an image", `write \`bun run images set ${session} --clear\``);
          const state = await client.sandbox.set(session!, { image: values.clear ? null : parseImageArgument(text!, "image") });
          return out.json ? out.printJson(sessionSandboxJson(state)) : out.line(sessionSandboxView(state, out));
        }
        case "rm": {
          const [text] = expectPositionals(rest, ["image"]) as [string];
          const { removed } = await client.images.remove(text);
          return out.json ? out.printJson({ removed }) : out.line(`removed ${removed}`);
        }
        case "prune": {
          expectPositionals(rest, []);
          const olderThanMs = values["older-than"] === undefined ? 0 : parseDurationMs(values["older-than"], "--older-than");
          const result = await client.images.prune({ olderThanMs, dryRun: Boolean(values["dry-run"]) });
          if (out.json) return out.printJson(result);
          if (result.removed.length === 0) return out.line("nothing to prune: every cached image is in use or was used recently");
          out.line(`${result.dryRun ? "would remove" : "removed"} ${result.removed.join(", ")} (${sizeCell(result.freedBytes)})`);
          return;
        }
        default:
          throw new UsageError(`unknown action ${JSON.stringify(action)}`, "use `bun run images`, `images pull`, `images set`, `images rm` or `images prune`");
      }
    },
  );
}
