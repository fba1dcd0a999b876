// `shell` as an operator uses it, driven through tmux (send-keys / capture-pane) against the real manager
// process over the real local runtime: the VM's hostname, Ctrl-C interrupting a sleep in the VM, a window
// resize followed inside, and `exit` back at the host prompt with the CLI's exit code 0.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { eventually } from "../actors/fixture";
import { ROOT, startAdminManager, type AdminManager } from "../admin/fixture";

let m: AdminManager;
/** A tmux server of this test's own (-S, in a temp dir), so no one else's sessions are touched; killed and removed at the end. */
const socketDir = mkdtempSync("/tmp/ss-tmux-");
const socket = `${socketDir}/tmux.sock`;
const tmux = (...args: string[]) => {
  const result = Bun.spawnSync(["tmux", "-S", socket, ...args], { stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`tmux ${args.join(" ")} failed: ${result.stderr.toString()}`);
  return result.stdout.toString();
};
const screen = () => tmux("capture-pane", "-p", "-J", "-t", "op");
const keys = (...k: string[]) => tmux("send-keys", "-t", "op", ...k);

/** Waits until the visible screen matches, failing with what it shows. */
async function waitForScreen(pattern: RegExp): Promise<string> {
  await eventually(() => pattern.test(screen()), 30_000).catch(() => {
    throw new Error(`the screen never showed ${pattern}:\n${screen()}`);
  });
  return screen();
}

beforeAll(async () => {
  m = await startAdminManager({ vms: true });
  await m.client.sessions.register({ id: "ses_tmux", directory: m.makeRepo("tmux") });
  // The operator's host shell: a plain bash with a prompt of its own, the manager's URL and token in its env.
  tmux(
    "new-session", "-d", "-s", "op", "-x", "120", "-y", "40",
    "-e", `SANDBOX_URL=${m.env.SANDBOX_URL}`, "-e", `SANDBOX_API_TOKEN=${m.env.SANDBOX_API_TOKEN}`, "-e", "TERM=xterm-256color",
    "-c", ROOT, "bash --norc --noprofile",
  );
}, 600_000);

afterAll(async () => {
  Bun.spawnSync(["tmux", "-S", socket, "kill-server"]);
  rmSync(socketDir, { recursive: true, force: true });
  await m?.cleanup();
}, 120_000);

describe("shell through tmux", () => {
  test("hostname → the VM's name; Ctrl-C interrupts a sleep; resize follows; exit → the host prompt, exit code 0", async () => {
    const vmName = (await m.client.sandbox.get("ses_tmux")).vmName;
    keys("PS1='host$ '; clear", "Enter"); // bash sets its own PS1 over the environment's
    await waitForScreen(/^host\$ $/m);
    keys("bun run cli/session-sandbox.ts shell ses_tmux; echo cli-exit=$?", "Enter");
    await waitForScreen(/# $/m); // the VM's root prompt (the VM booted for it)

    keys("hostname", "Enter");
    await waitForScreen(new RegExp(`^${vmName}$`, "m"));

    // Output of the command itself proves bash gave it the terminal before Ctrl-C is typed.
    keys("sh -c 'echo sleeping; exec sleep 100'", "Enter");
    await waitForScreen(/^sleeping$/m);
    keys("C-c");
    await waitForScreen(/^sleeping\n\^C\n.*# $/m); // the prompt is back, 100 s early
    keys("echo status=$?", "Enter");
    await waitForScreen(/^status=130$/m);

    tmux("resize-window", "-t", "op", "-x", "100", "-y", "30");
    await eventually(async () => {
      keys("stty size", "Enter");
      await Bun.sleep(200);
      return /^30 100$/m.test(screen());
    }, 30_000);

    keys("exit", "Enter");
    const after = await waitForScreen(/^cli-exit=\d+\nhost\$ $/m);
    expect(after).toMatch(/^cli-exit=0$/m);
    // The shell ended in the VM too: nothing of it still runs there.
    await eventually(async () => (await m.client.vms.list()).vms.every((vm) => vm.runningExecs === 0));
  }, 180_000);
});
