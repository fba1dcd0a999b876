// The baseline for bench/api.ts: the least a Bun HTTP server can do. Prints its URL, then serves.
const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("hello") });
console.log(server.url.href.replace(/\/$/, ""));
process.on("SIGTERM", () => process.exit(0));
