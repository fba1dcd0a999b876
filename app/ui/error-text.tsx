/** @jsxImportSource preact */
// An API or render failure, announced and labelled as an error (not by colour alone).
import { describeError } from "./api";

export function ErrorText({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {describeError(error)}
    </p>
  );
}
