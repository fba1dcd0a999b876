// The dashboard at /: one HTML page, its script (bundled from app/ui/ on first request, kept in memory) and
// its stylesheet. No data is served here: the page signs in with the API token and calls /api like the SDK.
import { Elysia, t } from "elysia";
import { randomBytes } from "node:crypto";
import { join } from "node:path";

const UI_DIR = join(import.meta.dir, "../ui");

/**
 * Nothing inline, nothing from elsewhere: the page's own script and style, and calls to its own API. One
 * exception, for styles only: <style> elements carrying this page's nonce, which is new on every load. The
 * terminal (xterm.js) sizes its grid with <style> elements it makes at run time; app/ui/terminal/main.ts
 * gives them the nonce, and nothing else on the page makes any. Scripts stay 'self' only.
 */
const dashboardCsp = (styleNonce: string) =>
  `default-src 'none'; script-src 'self'; style-src 'self' 'nonce-${styleNonce}'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;
const ASSET_CSP = dashboardCsp("none");

const html = (styleNonce: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="style-nonce" content="${styleNonce}">
<title>session-sandbox</title>
<link rel="stylesheet" href="/ui/app.css">
<script type="module" src="/ui/app.js"></script>
</head>
<body><div id="app"></div></body>
</html>
`;

/**
 * The page's script and, loaded only when a terminal is opened, the terminal's (xterm.js is most of the
 * weight): each built once per process; a failed build is not cached, so the next request tries again.
 */
const bundles = new Map<string, Promise<string>>();
function buildClient(entry: string): Promise<string> {
  let bundle = bundles.get(entry);
  if (!bundle) {
    bundle = Bun.build({ entrypoints: [join(UI_DIR, entry)], minify: true, target: "browser", format: "esm" })
      .then(async (result) => {
        if (!result.success || !result.outputs[0]) throw new AggregateError(result.logs, "dashboard build failed");
        return result.outputs[0].text();
      })
      .catch((error: unknown) => {
        bundles.delete(entry);
        throw error;
      });
    bundles.set(entry, bundle);
  }
  return bundle;
}

function asset(body: string, type: string, csp = ASSET_CSP): Response {
  return new Response(body, {
    headers: { "content-type": type, "content-security-policy": csp, "x-content-type-options": "nosniff", "referrer-policy": "no-referrer", "cache-control": "no-cache" },
  });
}

export function dashboardRoutes() {
  const css = Bun.file(join(UI_DIR, "style.css"));
  // Found as a module is: in the repository's node_modules, or the installed package's bundled one.
  const terminalCss = Bun.file(Bun.resolveSync("@xterm/xterm/css/xterm.css", import.meta.dir));
  // Public (see PUBLIC_PATHS), so 200 is the only status; hidden from the OpenAPI document, which is the API's.
  const hook = { response: { 200: t.String() }, detail: { hide: true } };
  return new Elysia()
    .get(
      "/",
      () => {
        const nonce = randomBytes(16).toString("base64");
        return asset(html(nonce), "text/html; charset=utf-8", dashboardCsp(nonce));
      },
      hook,
    )
    .get("/ui/app.js", async () => asset(await buildClient("main.tsx"), "text/javascript; charset=utf-8"), hook)
    .get("/ui/terminal.js", async () => asset(await buildClient("terminal/main.ts"), "text/javascript; charset=utf-8"), hook)
    .get("/ui/app.css", async () => asset(await css.text(), "text/css; charset=utf-8"), hook)
    .get("/ui/terminal.css", async () => asset(await terminalCss.text(), "text/css; charset=utf-8"), hook);
}
