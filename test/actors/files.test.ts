// Files in and out of a session's VM over the real local runtime: bytes both ways, tars, modes, links
// resolved inside the VM (never on the host), refusals with reasons, a broken upload that changes nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { BodyTooLargeError, FileNotFoundError, FileRefusedError } from "../../sdk/index";
import { makeActorFixture, type ActorFixture } from "./fixture";

let f: ActorFixture;
let repo: string;
beforeAll(async () => {
  f = await makeActorFixture({ maxUploadBytes: 12 * 1024 * 1024 });
  repo = f.makeRepo("files");
  await f.client.sessions.register({ id: "ses_files", directory: repo });
}, 600_000);
afterAll(async () => f?.teardown(), 120_000);

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const inVm = async (command: string) => (await f.client.run("ses_files", { command })).stdout;
/** Lists or prints a tar's members without unpacking it on the host (tar -t, tar -xO). */
const tarOnHost = (args: string[], tar: Uint8Array) => Bun.spawnSync(["tar", ...args], { stdin: tar }).stdout.toString();

describe("files API", () => {
  test("a 10 MiB binary file → written and read back byte for byte; its size in a header; parents made", async () => {
    const data = randomBytes(10 * 1024 * 1024);
    const written = await f.client.files.write("ses_files", "/home/agent/deep/dir/blob.bin", data);
    expect(written).toEqual({ path: "/home/agent/deep/dir/blob.bin", bytes: data.byteLength });
    expect((await inVm("sha256sum /home/agent/deep/dir/blob.bin")).split(" ")[0]).toBe(sha256(data));
    expect(sha256(await f.client.files.read("ses_files", "/home/agent/deep/dir/blob.bin"))).toBe(sha256(data));
    const opened = await f.client.files.open("ses_files", "/home/agent/deep/dir/blob.bin");
    expect([opened.size, opened.mode]).toEqual([data.byteLength, "644"]);
    await opened.body.cancel();
  });

  test("a directory → as a tar of its contents; a tar → unpacked into a directory", async () => {
    await inVm("mkdir -p /tmp/tree/sub && echo one > /tmp/tree/a.txt && echo two > /tmp/tree/sub/b.txt");
    const tar = new Uint8Array(await new Response((await f.client.files.open("ses_files", "/tmp/tree", { tar: true })).body).arrayBuffer());
    expect(tarOnHost(["-t"], tar).split("\n").filter(Boolean).sort()).toEqual(["./", "./a.txt", "./sub/", "./sub/b.txt"]);
    expect(tarOnHost(["-xO", "./sub/b.txt"], tar)).toBe("two\n");
    await f.client.files.write("ses_files", "/tmp/copy", tar, { tar: true });
    expect(await inVm("cat /tmp/copy/a.txt /tmp/copy/sub/b.txt")).toBe("one\ntwo\n");
  });

  test("a link in the VM to /etc/shadow → the VM's /etc/shadow, never the host's", async () => {
    await inVm("ln -sf /etc/shadow /tmp/shadow-link");
    const read = new TextDecoder().decode(await f.client.files.read("ses_files", "/tmp/shadow-link"));
    expect(read).toBe(await inVm("cat /etc/shadow"));
    expect(read).not.toBe(readFileSync("/etc/shadow", "utf8"));
  });

  test("mode → set as given; a rewrite without one keeps the file's", async () => {
    await f.client.files.write("ses_files", "/tmp/tool.sh", "#!/bin/sh\necho ran\n", { mode: "0755" });
    expect(await inVm("/tmp/tool.sh; stat -c %a /tmp/tool.sh")).toBe("ran\n755\n");
    await f.client.files.write("ses_files", "/tmp/tool.sh", "#!/bin/sh\necho again\n");
    expect(await inVm("/tmp/tool.sh; stat -c %a /tmp/tool.sh")).toBe("again\n755\n");
  });

  test("an upload that breaks off → the old file is kept whole, no temp file is left", async () => {
    await f.client.files.write("ses_files", "/tmp/keep.txt", "old\n");
    let sent = false;
    const broken = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent) return controller.error(new Error("the client's disk failed"));
        sent = true;
        controller.enqueue(new TextEncoder().encode("partial new cont"));
      },
    });
    const error = await f.client.files.write("ses_files", "/tmp/keep.txt", broken).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(await inVm("cat /tmp/keep.txt")).toBe("old\n");
    expect(await inVm("ls -A /tmp | grep -c session-sandbox-upload || true")).toBe("0\n");
  });

  test("an upload over the limit → 413 naming it; the old file is kept", async () => {
    await f.client.files.write("ses_files", "/tmp/big.bin", "small\n");
    const tooBig = await f.client.files.write("ses_files", "/tmp/big.bin", new Blob([new Uint8Array(13 * 1024 * 1024)]).stream()).catch((e: unknown) => e);
    expect(tooBig).toBeInstanceOf(BodyTooLargeError);
    expect((tooBig as Error).message).toContain(String(12 * 1024 * 1024));
    expect(await inVm("cat /tmp/big.bin")).toBe("small\n");
  });

  test("missing, a directory without tar, a write over a directory, a relative path, another content type → 4xx with the reason", async () => {
    expect(await f.client.files.read("ses_files", "/no/such/file").catch((e: unknown) => e)).toBeInstanceOf(FileNotFoundError);
    const dir = await f.client.files.read("ses_files", "/tmp").catch((e: unknown) => e);
    expect(dir).toBeInstanceOf(FileRefusedError);
    expect((dir as Error).message).toContain("application/x-tar");
    const overDir = await f.client.files.write("ses_files", "/tmp", "x").catch((e: unknown) => e);
    expect(overDir).toBeInstanceOf(FileRefusedError);
    expect((overDir as Error).message).toContain("is a directory");
    expect((await f.request("GET", "/api/sessions/ses_files/files?path=relative")).status).toBe(422);
    const wrongType = await f.request("PUT", `/api/sessions/ses_files/files?path=/tmp/x`, { body: "{}", headers: { "content-type": "application/json" } });
    expect(wrongType.status).toBe(415);
    expect(await f.request("GET", "/api/sessions/ses_nobody/files?path=/tmp").then((r) => r.status)).toBe(404);
  });

  test("each read and write → in the session's history under a label saying so", async () => {
    const { execs } = await f.client.execs.list("ses_files", { limit: 200 });
    expect(execs.some((e) => e.command === "(files: write /tmp/keep.txt)")).toBe(true);
    expect(execs.some((e) => e.command === "(files: read /tmp/shadow-link)")).toBe(true);
  });
});
