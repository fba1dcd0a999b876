// The baselines for bench/api.ts: the least a Bun HTTP server can do ("hello"), or, given a file, the same
// least work answering that file's bytes as JSON (the floor for a response of the manager's size). Prints
// its URL, then serves.
import { readFileSync } from "node:fs";

const file = process.argv[2];
const body = file ? readFileSync(file) : undefined;
const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch: body ? () => new Response(body, { headers: { "content-type": "application/json" } }) : () => new Response("hello"),
});
console.log(server.url.href.replace(/\/$/, ""));
process.on("SIGTERM", () => process.exit(0));
