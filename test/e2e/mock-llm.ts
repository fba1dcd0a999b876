// A scripted OpenAI-compatible model on 127.0.0.1: `RUN:<cmd>` → one `bash` tool call, `TASK:<cmd>` → a
// `task` tool call whose subagent then gets `RUN:<cmd>`, `CALL:<tool> <json args>` → that tool call as
// given, `HOLD:<name>` → an answer held back until release(name) (a model that thinks for as long as a
// test needs), a tool result → "done", anything else → a title.
export type MockLlm = {
  url: string;
  /** Every request body received, newest last (to see which tool definitions OpenCode sent). */
  requests: Array<{ messages: Array<{ role: string; content: unknown }>; tools?: Array<{ function: { name: string; description: string; parameters: unknown } }> }>;
  /** Lets the answers held by `HOLD:<name>` go (now, or as soon as one arrives). */
  release(name: string): void;
  stop(): void;
};

type Delta = { content?: string; tool_calls?: unknown[] };

function chunk(delta: Delta, finish: string | null, usage = false): string {
  const body = {
    id: "mock",
    object: "chat.completion.chunk",
    created: 0,
    model: "scripted",
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...(usage ? { usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } } : {}),
  };
  return `data: ${JSON.stringify(body)}\n\n`;
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => (part as { text?: string }).text ?? "").join("");
  return "";
}

let callCounter = 0;

function reply(body: MockLlm["requests"][number]): string {
  const last = body.messages.at(-1);
  const offered = new Set((body.tools ?? []).map((tool) => tool.function.name));
  if (last?.role === "tool") return chunk({ content: "done" }, null) + chunk({}, "stop", true);
  const text = textOf(last?.content);
  const call = (name: string, args: unknown) =>
    chunk({ tool_calls: [{ index: 0, id: `call_${++callCounter}`, type: "function", function: { name, arguments: JSON.stringify(args) } }] }, null) +
    chunk({}, "tool_calls", true);
  const named = /CALL:(\S+) (\{[\s\S]*\})\s*$/.exec(text);
  if (named && offered.has(named[1]!)) return call(named[1]!, JSON.parse(named[2]!));
  const run = /RUN:([\s\S]+)$/.exec(text);
  if (run && offered.has("bash")) return call("bash", { command: run[1]!.trim(), description: "scripted command" });
  const task = /TASK:([\s\S]+)$/.exec(text);
  if (task && offered.has("task")) return call("task", { description: "scripted subagent", prompt: `RUN:${task[1]!.trim()}`, subagent_type: "general" });
  const forward = /SANDBOX_FORWARD:(\d+)/.exec(text);
  if (forward && offered.has("sandbox")) return call("sandbox", { action: "forward", port: Number(forward[1]) });
  const status = /SANDBOX_STATUS/.test(text);
  if (status && offered.has("sandbox")) return call("sandbox", { action: "status" });
  return chunk({ content: "Mock title" }, null) + chunk({}, "stop", true);
}

export function startMockLlm(): MockLlm {
  const requests: MockLlm["requests"] = [];
  const gates = new Map<string, { promise: Promise<void>; open: () => void }>();
  const gate = (name: string) => {
    let entry = gates.get(name);
    if (!entry) {
      let open = () => undefined as void;
      const promise = new Promise<void>((resolve) => (open = resolve));
      gates.set(name, (entry = { promise, open }));
    }
    return entry;
  };
  const server = Bun.serve({
    port: 0,
    // A held answer waits as long as its test says: no idle cut-off.
    idleTimeout: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      if (!new URL(request.url).pathname.endsWith("/chat/completions")) return new Response("not found", { status: 404 });
      const body = (await request.json()) as MockLlm["requests"][number];
      requests.push(body);
      const last = body.messages.at(-1);
      const held = last?.role === "user" ? /HOLD:(\w+)/.exec(textOf(last.content)) : null;
      if (held) await gate(held[1]!).promise;
      return new Response(reply(body) + "data: [DONE]\n\n", { headers: { "content-type": "text/event-stream" } });
    },
  });
  return { url: `http://127.0.0.1:${server.port}/v1`, requests, release: (name) => gate(name).open(), stop: () => void server.stop(true) };
}
