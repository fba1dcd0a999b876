/** @jsxImportSource preact */
// The dashboard shell: sign-in, navigation, and the event stream whose every event refreshes the open page.
import type { EventSourceMessage } from "eventsource-parser";
import { useEffect, useErrorBoundary, useRef, useState } from "preact/hooks";
import { api, describeError, tokenStore } from "./api";
import { followEvents, type StreamState } from "./event-feed";
import { ErrorText } from "./error-text";
import { ActivityPage } from "./pages/activity";
import { OverviewPage } from "./pages/overview";
import { SessionsPage } from "./pages/sessions";
import { SettingsPage } from "./pages/settings";
import { VmPage } from "./pages/vm";
import { VmsPage } from "./pages/vms";

const PAGES = { overview: "Overview", sessions: "Sessions", vms: "VMs", activity: "Activity", settings: "Settings" } as const;
type Page = keyof typeof PAGES;

const pageFromHash = (): Page => {
  const name = location.hash.slice(1);
  if (name.startsWith("vm/")) return "vms";
  return name in PAGES ? (name as Page) : "overview";
};

/** `#vm/<name>`: one VM's own page (pages/vm.tsx), under VMs in the navigation. */
const vmFromHash = (): string | null => (location.hash.startsWith("#vm/") ? decodeURIComponent(location.hash.slice(4)) : null);

function SignIn({ onSignedIn, error }: { onSignedIn(): void; error: string | null }) {
  const [message, setMessage] = useState<string | null>(error);
  async function submit(event: Event) {
    event.preventDefault();
    const token = new FormData(event.target as HTMLFormElement).get("token");
    tokenStore.set(String(token ?? "").trim());
    try {
      await api("GET", "/api/settings/sandbox");
      onSignedIn();
    } catch (err) {
      tokenStore.clear();
      setMessage(describeError(err));
    }
  }
  return (
    <main class="sign-in">
      <h1>session-sandbox</h1>
      <form onSubmit={submit}>
        <label for="token">API token</label>
        <input id="token" name="token" type="password" autocomplete="off" required aria-describedby={message ? "token-error" : undefined} aria-invalid={message ? "true" : undefined} />
        <button type="submit">Sign in</button>
        {message && (
          <p id="token-error" class="error" role="alert">
            {message}
          </p>
        )}
      </form>
      <p class="hint">The token is in the manager's data directory (bun run token). It stays in this tab only.</p>
    </main>
  );
}

const FEED_SIZE = 200;

export function App() {
  const [signedIn, setSignedIn] = useState(tokenStore.get() !== null);
  const [refused, setRefused] = useState<string | null>(null);
  const [page, setPage] = useState<Page>(pageFromHash());
  const [vm, setVm] = useState<string | null>(vmFromHash());
  const [tick, setTick] = useState(0);
  const [feed, setFeed] = useState<EventSourceMessage[]>([]);
  const [stream, setStream] = useState<StreamState>("connecting");
  const pending = useRef<number | undefined>(undefined);
  // A page that fails to render says so, instead of going blank; the next page or refresh tries again.
  const [renderError, resetRenderError] = useErrorBoundary((error: unknown) => console.error("dashboard render error:", error));
  useEffect(() => resetRenderError(), [page, tick]);

  useEffect(() => {
    const onHash = () => (setPage(pageFromHash()), setVm(vmFromHash()));
    addEventListener("hashchange", onHash);
    return () => removeEventListener("hashchange", onHash);
  }, []);

  useEffect(() => {
    if (!signedIn) return;
    const abort = new AbortController();
    void followEvents(abort.signal, {
      onEvent(message) {
        setFeed((old) => [message, ...old].slice(0, FEED_SIZE));
        // A burst of events is one refresh, at most 100 ms after its first event.
        pending.current ??= window.setTimeout(() => {
          pending.current = undefined;
          setTick((n) => n + 1);
        }, 100);
      },
      onState(state) {
        setStream(state);
        if (state === "refused") signOut("The token was refused (401). Sign in again with the manager's API token.");
      },
    });
    return () => abort.abort();
  }, [signedIn]);

  function signOut(reason: string | null = null) {
    tokenStore.clear();
    setRefused(reason);
    setSignedIn(false);
  }

  if (!signedIn) return <SignIn error={refused} onSignedIn={() => (setRefused(null), setSignedIn(true))} />;
  const Current = { overview: OverviewPage, sessions: SessionsPage, vms: VmsPage, activity: ActivityPage, settings: SettingsPage }[page];
  return (
    <>
      <header>
        <p class="brand">session-sandbox</p>
        <nav aria-label="Dashboard">
          <ul>
            {(Object.keys(PAGES) as Page[]).map((name) => (
              <li key={name}>
                <a href={`#${name}`} aria-current={name === page ? "page" : undefined}>
                  {PAGES[name]}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <p class="stream" role="status">
          Events: {stream}
        </p>
        <button type="button" onClick={() => signOut()}>
          Sign out
        </button>
      </header>
      <main>
        <h1>{vm ? `VM ${vm}` : PAGES[page]}</h1>
        {renderError ? <ErrorText error={renderError} /> : vm ? <VmPage name={vm} tick={tick} feed={feed} /> : <Current tick={tick} feed={feed} />}
      </main>
    </>
  );
}
