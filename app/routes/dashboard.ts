// The dashboard at /: one HTML page, its script (bundled from app/ui/ on first request, kept in memory) and
// its stylesheet. No data is served here: the page signs in with the API token and calls /api like the SDK.
import { Elysia, t } from "elysia";
import { join } from "node:path";

const UI_DIR = join(import.meta.dir, "../ui");

/** Nothing inline, nothing from elsewhere: the page's own script and style, and calls to its own API. */
const DASHBOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>session-sandbox</title>
<link rel="stylesheet" href="/ui/app.css">
<script type="module" src="/ui/app.js"></script>
</head>
<body><div id="app"></div></body>
</html>
`;

let bundle: Promise<string> | undefined;

/** Builds the client once per process; a failed build is not cached, so the next request tries again. */
function buildClient(): Promise<string> {
  bundle ??= Bun.build({ entrypoints: [join(UI_DIR, "main.tsx")], minify: true, target: "browser", format: "esm" })
    .then(async (result) => {
      if (!result.success || !result.outputs[0]) throw new AggregateError(result.logs, "dashboard build failed");
      return result.outputs[0].text();
    })
    .catch((error: unknown) => {
      bundle = undefined;
      throw error;
    });
  return bundle;
}

function asset(body: string, type: string): Response {
  return new Response(body, {
    headers: { "content-type": type, "content-security-policy": DASHBOARD_CSP, "x-content-type-options": "nosniff", "referrer-policy": "no-referrer", "cache-control": "no-cache" },
  });
}

export function dashboardRoutes() {
  const css = Bun.file(join(UI_DIR, "style.css"));
  // Public (see PUBLIC_PATHS), so 200 is the only status; hidden from the OpenAPI document, which is the API's.
  const hook = { response: { 200: t.String() }, detail: { hide: true } };
  return new Elysia()
    .get("/", () => asset(HTML, "text/html; charset=utf-8"), hook)
    .get("/ui/app.js", async () => asset(await buildClient(), "text/javascript; charset=utf-8"), hook)
    .get("/ui/app.css", async () => asset(await css.text(), "text/css; charset=utf-8"), hook);
}
