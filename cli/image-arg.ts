// How the CLI writes an image: `builtin`, `builtin+jq,postgresql-client` (the built-in image plus
// Debian packages), or an OCI reference such as `127.0.0.1:5000/team/node:22`. The manager checks the rest.
import type { SandboxClient } from "../sdk/index";
import { UsageError } from "./errors";

export type ImageChoice = Awaited<ReturnType<SandboxClient["settings"]["get"]>>["image"];

export const IMAGE_SYNTAX = "builtin, builtin+<package>,<package>… (the built-in image plus Debian packages), dockerfile:<path in the repository> (built from the session's Dockerfile), or an OCI reference such as 127.0.0.1:5000/team/node:22";
/** The CLI's default for `dockerfile:` with no path; the manager's own default is the same place. */
const DEFAULT_DOCKERFILE_PATH = ".opencode-sandbox/Dockerfile";

export function parseImageArgument(text: string, what: string): ImageChoice {
  if (text === "builtin") return { kind: "recipe", packages: [] };
  if (text.startsWith("builtin+")) {
    const packages = text.slice("builtin+".length).split(",").filter((name) => name !== "");
    if (packages.length === 0) throw new UsageError(`${what} ${JSON.stringify(text)} names no package`, "write builtin+jq,postgresql-client");
    return { kind: "recipe", packages };
  }
  if (text.trim().startsWith("{")) {
    try {
      return JSON.parse(text) as ImageChoice;
    } catch {
      throw new UsageError(`${what} ${JSON.stringify(text)} is not valid JSON`, `write ${IMAGE_SYNTAX}`);
    }
  }
  if (text.startsWith("dockerfile:")) return { kind: "dockerfile", path: text.slice("dockerfile:".length) || DEFAULT_DOCKERFILE_PATH };
  if (text === "" || /\s/.test(text)) throw new UsageError(`${what} ${JSON.stringify(text)} is not an image`, `write ${IMAGE_SYNTAX}`);
  return { kind: "oci", reference: text.startsWith("oci:") ? text.slice(4) : text };
}

/** The inverse of parseImageArgument, for tables. */
export function describeImageChoice(choice: ImageChoice): string {
  if (choice.kind === "oci") return choice.reference;
  if (choice.kind === "dockerfile") return `dockerfile:${choice.path}`;
  return choice.packages.length === 0 ? "builtin" : `builtin+${choice.packages.join(",")}`;
}
