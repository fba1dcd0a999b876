// The baseline of bench/actor-memory.ts: a Bun Worker that loads nothing and answers every message.
declare const self: Worker;
self.onmessage = () => self.postMessage({ type: "reply" });
