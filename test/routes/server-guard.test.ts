// Bun's idle timeout against the requests that may stay quiet for long (server-guard.ts), on a real
// Bun.serve whose idle timeout is 1 s (Bun cuts an idle request at about 4 s: its timers tick every 4 s):
// a Docker start and an exec that answer after 5 s get their answer; any other route as slow is cut.
import { afterAll, describe, expect, test } from "bun:test";
import { guardFetch } from "../../app/http/server-guard";

const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  idleTimeout: 1,
  fetch: guardFetch(async () => {
    await Bun.sleep(5_000);
    return new Response("answered");
  }),
});
afterAll(() => void server.stop(true));

const ask = (method: string, path: string) =>
  fetch(`${server.url.href.replace(/\/$/, "")}${path}`, { method }).then(
    (response) => response.text(),
    (error: Error) => `cut: ${error.name}`,
  );

describe("the idle timeout", () => {
  test("POST …/docker/start and …/exec, silent for 5 s → answered; another route as slow → cut at the idle timeout", async () => {
    const [docker, exec, other] = await Promise.all([ask("POST", "/api/sessions/ses_1/docker/start"), ask("POST", "/api/sessions/ses_1/exec"), ask("POST", "/api/sessions/ses_1/ports")]);
    expect({ docker, exec }).toEqual({ docker: "answered", exec: "answered" });
    expect(other).toStartWith("cut: ");
  });
});
