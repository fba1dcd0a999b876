// The API's network check knows the runtime a session's tier runs on: settings' default policy and a root
// session's override are refused (400) when msb (the microvm tier) cannot enforce an entry, else accepted.
import { afterEach, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { openDatabase } from "../../app/db/open";
import { NetworkPolicyInvalidError } from "../../app/errors";
import { createServices } from "../../app/services/index";
import { TIERS } from "../../runtime/tiers/index";
import { makeTempDir, TEST_HOST } from "../helpers";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** `msbFor`: the isolation choices that run on msb here (as the manager's placement says). */
function services(msbFor: readonly string[]) {
  const dir = makeTempDir();
  dirs.push(dir);
  const s = createServices({ db: openDatabase(dir), host: TEST_HOST, envDefaults: {}, networkTierFor: (choice) => (msbFor.includes(choice) ? TIERS.microvm : undefined) });
  s.sessions.register({ id: "ses_root", directory: dir });
  return s;
}

const refusal = (f: () => unknown) => {
  try {
    f();
  } catch (error) {
    return error;
  }
  return undefined;
};

describe("checkNetworkPolicy per runtime", () => {
  const unenforceable = ["loopback", "host:22", "host.sandbox.internal:4873", "localhost:3000"];

  test("runtime msb: settings default with an entry msb cannot enforce → 400 naming the entry, msb and the fix; nothing stored", () => {
    const s = services(["auto", "microvm"]);
    for (const entry of unenforceable) {
      const error = refusal(() => s.settings.patch({ network: { mode: "allowlist", allow: ["api.github.com", entry] } }));
      expect(error).toBeInstanceOf(NetworkPolicyInvalidError);
      expect((error as NetworkPolicyInvalidError).status).toBe(400);
      expect((error as Error).message).toContain(`"${entry}"`);
      expect((error as Error).message).toContain("msb runtime");
      expect((error as Error).message).toMatch(/remove (it|the entry)/);
    }
    expect(s.settings.get().network).toEqual({ mode: "none" });
  });

  test("runtime msb: a session override with one → 400; with enforceable entries (ports, ranges, keywords) → stored", () => {
    const s = services(["auto", "microvm"]);
    expect(refusal(() => s.sessionSandbox.update("ses_root", { network: { mode: "allowlist", allow: ["loopback"] } }))).toBeInstanceOf(NetworkPolicyInvalidError);
    const allow = ["api.github.com:443", "10.0.0.0/8:80-90", "[2001:db8::/32]:443", "private:5432", "public"];
    expect(s.sessionSandbox.update("ses_root", { network: { mode: "allowlist", allow } }).network.effective).toEqual({ mode: "allowlist", allow });
  });

  test("a tier that is not msb (auto → gvisor here, or no runtime): the same entries → stored; a grammar error → 400 on every runtime", () => {
    for (const msbFor of [["microvm"], []]) {
      const s = services(msbFor);
      expect(s.settings.patch({ network: { mode: "allowlist", allow: unenforceable } }).network).toEqual({ mode: "allowlist", allow: unenforceable });
      const error = refusal(() => s.sessionSandbox.update("ses_root", { network: { mode: "allowlist", allow: ["10.0.0.1/8"] } }));
      expect((error as Error).message).toContain("write 10.0.0.0/8");
    }
  });

  test("a session moved to the microvm tier with an allowlist msb cannot enforce → 400, nothing changed; moved with a fixed policy → stored", () => {
    const s = services(["microvm"]);
    s.sessionSandbox.update("ses_root", { network: { mode: "allowlist", allow: ["loopback"] }, isolation: "container" });
    const error = refusal(() => s.sessionSandbox.update("ses_root", { isolation: "microvm" }));
    expect((error as Error).message).toContain('"loopback"');
    expect(s.sessionSandbox.get("ses_root").isolation.override).toBe("container");
    expect(s.sessionSandbox.update("ses_root", { isolation: "microvm", network: { mode: "allowlist", allow: ["private:5432"] } }).isolation.effective).toBe("microvm");
  });

  test("the settings' default isolation moved to microvm while the default policy has an msb-unenforceable entry → 400", () => {
    const s = services(["microvm"]);
    s.settings.patch({ network: { mode: "allowlist", allow: ["host.sandbox.internal:4873"] } });
    expect(refusal(() => s.settings.patch({ isolation: "microvm" }))).toBeInstanceOf(NetworkPolicyInvalidError);
    expect(s.settings.get().isolation).toBe("auto");
  });
});
