// The hint a failed command in a VM without network gets: from the end of its own stderr, only when a name
// lookup failed, naming strict host names only.
import { describe, expect, test } from "bun:test";
import type { NetworkPolicy } from "../../egress/network-policy";
import { hostsNamed, networkOffHint } from "../../app/services/network-off-hint";

const failed = { exitCode: 1, timedOut: false, cancelled: false, oomKilled: false };
const encode = (text: string) => new TextEncoder().encode(text);

function hintFor(stderr: string[], options: { network?: NetworkPolicy; outcome?: typeof failed; stdout?: string } = {}): string[] {
  const hint = networkOffHint({ rootSessionID: "ses_1", spec: { network: options.network ?? { mode: "none" } } as never });
  if (options.stdout) hint.chunk("stdout", encode(options.stdout));
  for (const chunk of stderr) hint.chunk("stderr", encode(chunk));
  return hint.notes(options.outcome ?? failed);
}

const NPM = "npm ERR! code EAI_AGAIN\nnpm ERR! errno EAI_AGAIN\nnpm ERR! request to https://registry.npmjs.org/left-pad failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org\n";

describe("networkOffHint", () => {
  test("npm's EAI_AGAIN → the reason and the command that allows the registry", () => {
    expect(hintFor([NPM])).toEqual(['session-sandbox: this VM has no network (its policy is "none"), so no name resolves in it; to let it reach registry.npmjs.org: `session-sandbox network ses_1 allow registry.npmjs.org`\n']);
  });

  test("curl, git, pip (urllib3) and Go name their hosts → each once, in order, at most three", () => {
    expect(hostsNamed("curl: (6) Could not resolve host: example.com\nfatal: unable to access 'https://github.com/x/y/': Could not resolve host: github.com\n")).toEqual(["example.com", "github.com"]);
    expect(hostsNamed("HTTPSConnectionPool(host='pypi.org', port=443): Max retries exceeded ... Temporary failure in name resolution")).toEqual(["pypi.org"]);
    expect(hostsNamed("dial tcp: lookup proxy.golang.org on 10.0.0.1:53: no such host")).toEqual(["proxy.golang.org"]);
    expect(hostsNamed("Could not resolve host: a.test\nCould not resolve host: a.test\nCould not resolve host: b.test\nCould not resolve host: c.test\nCould not resolve host: d.test")).toEqual(["a.test", "b.test", "c.test"]);
  });

  test("a failure that names no host → the command with a placeholder", () => {
    expect(hintFor(["socket.gaierror: [Errno -3] Temporary failure in name resolution\n"])).toEqual(['session-sandbox: this VM has no network (its policy is "none"), so no name resolves in it; to let it reach a host: `session-sandbox network ses_1 allow <host>`\n']);
  });

  test("a guest's text where a host would be → never echoed unless it is a strict host name", () => {
    expect(hostsNamed("Could not resolve host: $(touch${IFS}/tmp/x)\nCould not resolve host: `id`.example\ngetaddrinfo ENOTFOUND ex\u00e4mple.com\nCould not resolve host: ok.example.")).toEqual(["ok.example"]);
  });

  test("success, a cancel, a timeout, no lookup failure, or the message on stdout only → nothing", () => {
    expect(hintFor([NPM], { outcome: { ...failed, exitCode: 0 } })).toEqual([]);
    expect(hintFor([NPM], { outcome: { ...failed, cancelled: true } })).toEqual([]);
    expect(hintFor([NPM], { outcome: { ...failed, timedOut: true } })).toEqual([]);
    expect(hintFor(["error: something else\n"])).toEqual([]);
    expect(hintFor([], { stdout: NPM })).toEqual([]);
  });

  test("a VM with network (allowlist or all) → nothing: its proxy's refusals speak for themselves", () => {
    expect(hintFor([NPM], { network: { mode: "allowlist", allow: ["api.github.com"] } })).toEqual([]);
    expect(hintFor([NPM], { network: { mode: "all" } })).toEqual([]);
  });

  test("megabytes of stderr → only its end is looked at: a failure at the end is found, one long before it is not", () => {
    const flood = Array.from({ length: 256 }, () => "x".repeat(8 * 1024));
    expect(hintFor([...flood, NPM])).toHaveLength(1);
    expect(hintFor([NPM, ...flood])).toEqual([]);
  });
});
