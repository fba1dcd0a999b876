/** @jsxImportSource preact */
// Entry of the dashboard's client bundle (built by app/routes/dashboard.ts).
import { render } from "preact";
import { App } from "./app";

render(<App />, document.getElementById("app")!);
