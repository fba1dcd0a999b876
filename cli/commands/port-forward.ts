// `session-sandbox port-forward`: see ports.ts, which holds both commands of forwarded ports.
export { runForward as run } from "./ports";
