// `bun run settings`: show the server-wide sandbox settings; `settings set key=value ...` changes them.
import type { SandboxClient } from "../../sdk/index";
import { executeCommand } from "../frame";
import { UsageError } from "../errors";
import { formatDuration, formatMib } from "../format";
import { renderTable, type Output } from "../output";
import { parseBoolean, parseDurationMs, parseSizeMib, parseWholeNumber } from "../parse";
import { describeImageChoice, parseImageArgument, type ImageChoice } from "../image-arg";
import { describeNetwork, parseNetworkPolicy, type NetworkPolicy } from "../network-arg";
import { ISOLATION_CHOICES, isIsolationChoice, type IsolationChoice } from "../../runtime/isolation";

type Settings = Awaited<ReturnType<SandboxClient["settings"]["get"]>>;
type SettingsPatch = NonNullable<Parameters<SandboxClient["settings"]["patch"]>[0]>;
type Kind = "boolean" | "count" | "mib" | "minutes" | "ms" | "network" | "image" | "isolation";

/** Every key the manager accepts, with how its value is typed; tsc fails if the API gains or loses a key. */
const SETTING_KINDS = {
  enabled: "boolean",
  defaultForNewSessions: "boolean",
  cpus: "count",
  memoryMib: "mib",
  idleStopMinutes: "minutes",
  idleSuspendMinutes: "minutes",
  holdWhileBusy: "boolean",
  maxHoldMinutes: "minutes",
  maxRunningVms: "count",
  execTimeoutMs: "ms",
  network: "network",
  forwardGitCredentials: "boolean",
  diskMib: "mib",
  image: "image",
  maxImageMib: "mib",
  isolation: "isolation",
  docker: "boolean",
} as const satisfies { [K in keyof Required<SettingsPatch>]: Kind };
type SettingKey = keyof typeof SETTING_KINDS;

const isKey = (key: string): key is SettingKey => Object.hasOwn(SETTING_KINDS, key);

/** `null` (or `default`) returns the key to its default; numbers may carry units: 2G, 30m, 2h. */
function parseSettingValue(key: SettingKey, text: string): boolean | number | NetworkPolicy | ImageChoice | IsolationChoice | null {
  if (text === "null" || text === "default") return null;
  const what = key;
  switch (SETTING_KINDS[key]) {
    case "boolean":
      return parseBoolean(text, what);
    case "count":
      return parseWholeNumber(text, what);
    case "mib":
      return parseSizeMib(text, what);
    case "minutes": {
      if (/^\d+$/.test(text)) return Number(text);
      const ms = parseDurationMs(text, what);
      if (ms % 60_000 !== 0) throw new UsageError(`${what} ${JSON.stringify(text)} is not a whole number of minutes`, "write it like 30, 30m or 2h");
      return ms / 60_000;
    }
    case "ms":
      return /^\d+$/.test(text) ? Number(text) : parseDurationMs(text, what);
    case "network":
      return parseNetworkPolicy(text, what);
    case "image":
      return parseImageArgument(text, what);
    case "isolation":
      if (isIsolationChoice(text)) return text;
      throw new UsageError(`${what} ${JSON.stringify(text)} is not an isolation tier`, `write one of ${ISOLATION_CHOICES.join(", ")}`);
  }
}

export function parseAssignments(assignments: string[]): SettingsPatch {
  if (assignments.length === 0) throw new UsageError("`settings set` needs at least one key=value", `keys: ${Object.keys(SETTING_KINDS).join(", ")}`);
  const patch: Record<string, boolean | number | NetworkPolicy | ImageChoice | IsolationChoice | null> = {};
  for (const assignment of assignments) {
    const eq = assignment.indexOf("=");
    const key = eq > 0 ? assignment.slice(0, eq) : assignment;
    if (!isKey(key)) throw new UsageError(`unknown setting ${JSON.stringify(key)}`, `use one of ${Object.keys(SETTING_KINDS).join(", ")}`);
    if (eq < 0) throw new UsageError(`${JSON.stringify(assignment)} has no value`, `write ${key}=<value>, or ${key}=null for its default`);
    if (Object.hasOwn(patch, key)) throw new UsageError(`${key} is given twice`, "give each key once");
    patch[key] = parseSettingValue(key, assignment.slice(eq + 1));
  }
  return patch as SettingsPatch;
}

function describe(key: SettingKey, value: boolean | number | NetworkPolicy | ImageChoice | IsolationChoice): string {
  if (typeof value === "boolean" || typeof value === "string") return String(value);
  if (typeof value === "object") return "kind" in value ? describeImageChoice(value) : describeNetwork(value);
  const kind = SETTING_KINDS[key];
  if (kind === "mib") return `${value} (${formatMib(value)})`;
  if (kind === "minutes") return `${value} (${value === 0 ? "off" : formatDuration(value * 60_000)})`;
  if (kind === "ms") return `${value} (${formatDuration(value)})`;
  return String(value);
}

function settingsTable(settings: Settings, out: Output, changed: string[] = []): string {
  const rows = (Object.keys(SETTING_KINDS) as SettingKey[]).map((key) => {
    const value = describe(key, settings[key]);
    return [changed.includes(key) ? out.paint.yellow(key) : key, changed.includes(key) ? out.paint.bold(value) : value];
  });
  return renderTable([{ header: "SETTING" }, { header: "VALUE" }], rows, out.paint);
}

export function run(argv: string[]): Promise<number> {
  return executeCommand(
    {
      name: "settings",
      help: `usage: bun run settings [--json]
       bun run settings set key=value [key=value ...] [--json]

Shows the server-wide sandbox settings, or changes them. Keys: ${Object.keys(SETTING_KINDS).join(", ")}.
Values: true/false for booleans; whole numbers; memoryMib and diskMib also as 2G or 512M; idleStopMinutes also as
30m or 2h; execTimeoutMs also as 90s or 2m; network as none, all or allowlist:host,host (or JSON); image as
builtin, builtin+<package>,<package> or an OCI reference (see \`bun run images --help\`); isolation as auto,
container, gvisor or microvm (\`bun run doctor\` says which work here);
null (or default) returns a key to its default.`,
      options: {},
    },
    argv,
    async ({ positionals, out, client }) => {
      const [action, ...rest] = positionals;
      if (action !== undefined && action !== "set") throw new UsageError(`unknown action ${JSON.stringify(action)}`, "use `bun run settings` or `bun run settings set key=value`");
      if (action === undefined) {
        const settings = await client.settings.get();
        return out.json ? out.printJson(settings) : out.line(settingsTable(settings, out));
      }
      const patch = parseAssignments(rest);
      const settings = await client.settings.patch(patch);
      if (out.json) return out.printJson(settings);
      out.line(settingsTable(settings, out, Object.keys(patch)));
    },
  );
}
