// A command in a VM without network (policy "none", the default) that failed on a name lookup hears why on
// its stderr, with the command that lets it reach the host it wanted: npm's EAI_AGAIN, curl's "Could not
// resolve host" or pip's "Temporary failure in name resolution" do not say that the sandbox has the network
// off by policy. Read from the end of the command's own stderr (the guest's text: matched, never trusted —
// only strict host names are echoed back), and only when the command failed.
import type { PreparedExec } from "./exec-prepare";
import { NO_NOTES, type AfterNotes } from "./exec-runs";

/** How much of the end of a command's stderr is kept to look at: error messages come last. */
const TAIL_BYTES = 16 * 1024;
/** Host names named in the suggestion; more would make a line nobody reads. */
const MAX_HOSTS = 3;

/** What resolvers and their callers print when a name does not resolve (glibc, Node, curl, git, Go, Rust, Python). */
const LOOKUP_FAILED = /EAI_AGAIN|ENOTFOUND|Temporary failure in name resolution|Could not resolve host|Name or service not known|no such host|failed to lookup address|nodename nor servname/;

/** Where those messages name the host (npm, curl and git, Python's urllib3, Go). */
const HOST_IN_MESSAGE = [/getaddrinfo (?:EAI_AGAIN|ENOTFOUND) ([^\s,'")]+)/g, /Could not resolve host: ([^\s,'")]+)/g, /host='([^']+)'/g, /lookup ([^\s:]+)(?: on |: )/g];

const HOST_NAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/i;

/** The hosts a failed lookup named in `text`, strict host names only, in order of appearance. */
export function hostsNamed(text: string): string[] {
  const found = HOST_IN_MESSAGE.flatMap((pattern) => [...text.matchAll(pattern)].map((match) => ({ at: match.index, host: match[1]!.replace(/\.$/, "").toLowerCase() })));
  return [...new Set(found.sort((a, b) => a.at - b.at).map((entry) => entry.host).filter((host) => HOST_NAME.test(host)))].slice(0, MAX_HOSTS);
}

export function networkOffHint(prepared: Pick<PreparedExec, "rootSessionID" | "spec">): AfterNotes {
  if (prepared.spec.network.mode !== "none") return NO_NOTES;
  // The last chunks of stderr, as given (no copies), dropped from the front past TAIL_BYTES.
  const tail: Uint8Array[] = [];
  let held = 0;
  return {
    chunk(stream, data) {
      if (stream !== "stderr") return;
      tail.push(data);
      held += data.byteLength;
      while (tail.length > 1 && held - tail[0]!.byteLength >= TAIL_BYTES) held -= tail.shift()!.byteLength;
    },
    notes(outcome) {
      if (outcome.exitCode === 0 || outcome.cancelled || outcome.timedOut) return [];
      const text = Buffer.concat(tail).subarray(-TAIL_BYTES).toString("utf8");
      if (!LOOKUP_FAILED.test(text)) return [];
      const hosts = hostsNamed(text);
      const [reach, entries] = hosts.length > 0 ? [hosts.join(", "), hosts.join(" ")] : ["a host", "<host>"];
      return [`session-sandbox: this VM has no network (its policy is "none"), so no name resolves in it; to let it reach ${reach}: \`session-sandbox network ${prepared.rootSessionID} allow ${entries}\`\n`];
    },
  };
}
