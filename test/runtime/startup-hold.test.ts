// What a retried exec attempt printed never reaches the caller (the CI flake this fixes: crun's
// "fail startup / setns(…): Operation not permitted" showed up in a command's output before the retry's).
import { describe, expect, test } from "bun:test";
import { holdStartupOutput } from "../../runtime/local/startup-hold";

function recorder() {
  const seen: string[] = [];
  const text = (stream: string) => (chunk: Uint8Array) => seen.push(`${stream}:${Buffer.from(chunk).toString()}`);
  return { seen, sink: { stdout: text("out"), stderr: text("err") } };
}
const bytes = (text: string) => Buffer.from(text);

describe("startup hold", () => {
  test("a failed join's stderr, discarded → the caller never sees it", () => {
    const r = recorder();
    const hold = holdStartupOutput(r.sink, 60_000);
    hold.sink.stderr(bytes("fail startup\n"));
    hold.sink.stderr(bytes("setns(pid=1, CLONE_*): Operation not permitted\n"));
    hold.discard();
    hold.release();
    expect(r.seen).toEqual([]);
  });

  test("stderr before the first stdout, then stdout → both out, in arrival order; later output straight through", () => {
    const r = recorder();
    const hold = holdStartupOutput(r.sink, 60_000);
    hold.sink.stderr(bytes("warming up"));
    expect(r.seen).toEqual([]);
    hold.sink.stdout(bytes("result"));
    hold.sink.stderr(bytes("done"));
    expect(r.seen).toEqual(["err:warming up", "out:result", "err:done"]);
  });

  test("a command that prints only on stderr → released after the hold time, not kept until exit", async () => {
    const r = recorder();
    const hold = holdStartupOutput(r.sink, 30);
    hold.sink.stderr(bytes("progress 1%"));
    await Bun.sleep(60);
    expect(r.seen).toEqual(["err:progress 1%"]);
    hold.release();
  });

  test("only crun's join complaint held when the hold time is up (a loaded host) → kept until the attempt is discarded", async () => {
    const r = recorder();
    const hold = holdStartupOutput(r.sink, 30);
    hold.sink.stderr(bytes("setns(pid=17026, CLONE_*): Operation not permitted\nfail startup\n"));
    await Bun.sleep(60);
    expect(r.seen).toEqual([]);
    hold.discard();
    hold.release();
    expect(r.seen).toEqual([]);
  });

  test("crun's words followed by the command's own stderr → released at the hold time as usual", async () => {
    const r = recorder();
    const hold = holdStartupOutput(r.sink, 30);
    hold.sink.stderr(bytes("fail startup\n"));
    hold.sink.stderr(bytes("compiling…\n"));
    await Bun.sleep(60);
    expect(r.seen).toEqual(["err:fail startup\n", "err:compiling…\n"]);
    hold.release();
  });

  test("crun's words held past the hold time, then the command's own stderr → both out at once, in order", async () => {
    const r = recorder();
    const hold = holdStartupOutput(r.sink, 30);
    hold.sink.stderr(bytes("fail startup\n"));
    await Bun.sleep(60);
    expect(r.seen).toEqual([]);
    hold.sink.stderr(bytes("warning: slow disk\n"));
    expect(r.seen).toEqual(["err:fail startup\n", "err:warning: slow disk\n"]);
    hold.release();
  });
});
