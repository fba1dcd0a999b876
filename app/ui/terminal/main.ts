// The browser terminal (loaded only when one is opened: xterm.js is most of the dashboard's weight): a
// session's interactive shell over the shell WebSocket, opened with a single-use ticket (the page never puts
// its token in a URL), sized to its box, and resized with it.
import { FitAddon } from "@xterm/addon-fit";
import { Terminal } from "@xterm/xterm";
import { api } from "../api";

/**
 * xterm sizes its grid with <style> elements it makes as it goes; the page's CSP takes styles from its own
 * files and from <style> elements carrying the page's nonce (app/routes/dashboard.ts). Every <style> made
 * from now on gets it. Nothing else on the page makes any.
 */
function styleElementsCarryTheNonce(): void {
  const nonce = document.querySelector<HTMLMetaElement>('meta[name="style-nonce"]')?.content;
  const create = Document.prototype.createElement;
  if (!nonce || (create as { patched?: boolean }).patched) return;
  const patched = function (this: Document, name: string, options?: ElementCreationOptions) {
    const element = create.call(this, name, options);
    if (name.toLowerCase() === "style") element.nonce = nonce;
    return element;
  };
  (patched as { patched?: boolean }).patched = true;
  Document.prototype.createElement = patched as typeof Document.prototype.createElement;
}

function loadStylesheet(): void {
  if (document.querySelector('link[href="/ui/terminal.css"]')) return;
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = "/ui/terminal.css";
  document.head.append(link);
}

export type OpenTerminal = { close(): void };

/** Opens the session's shell in `box`; `onEnd` gets how it ended (an exit line, or why it could not run). */
export async function openTerminal(box: HTMLElement, session: string, onEnd: (why: string) => void): Promise<OpenTerminal> {
  styleElementsCarryTheNonce();
  loadStylesheet();
  const terminal = new Terminal({ cursorBlink: true, convertEol: false, fontSize: 14 });
  const fit = new FitAddon();
  terminal.loadAddon(fit);
  terminal.open(box);
  fit.fit();
  const { ticket } = await api<{ ticket: string }>("POST", `/api/sessions/${encodeURIComponent(session)}/shell/tickets`);
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const query = new URLSearchParams({ ticket, rows: String(terminal.rows), cols: String(terminal.cols) });
  const socket = new WebSocket(`${scheme}://${location.host}/api/sessions/${encodeURIComponent(session)}/shell?${query}`);
  socket.binaryType = "arraybuffer";
  const encoder = new TextEncoder();
  const typed = terminal.onData((data) => socket.readyState === WebSocket.OPEN && socket.send(encoder.encode(data)));
  const sized = terminal.onResize(({ rows, cols }) => socket.readyState === WebSocket.OPEN && socket.send(JSON.stringify({ type: "resize", rows, cols })));
  const observer = new ResizeObserver(() => fit.fit());
  observer.observe(box);
  socket.onmessage = (event) => {
    if (typeof event.data !== "string") return terminal.write(new Uint8Array(event.data as ArrayBuffer));
    const message = JSON.parse(event.data) as { type: string; exitCode?: number; message?: string };
    if (message.type === "started") terminal.focus();
    else if (message.type === "exit") onEnd(`the shell exited (${message.exitCode})`);
    else if (message.type === "error") onEnd(`the shell could not run: ${message.message}`);
  };
  socket.onclose = () => onEnd("the connection closed");
  return {
    close() {
      observer.disconnect();
      typed.dispose();
      sized.dispose();
      socket.close();
      terminal.dispose();
    },
  };
}
