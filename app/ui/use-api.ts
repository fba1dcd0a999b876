// useApi: a GET that reloads whenever the event stream ticks, keeping the last good data while it does.
import { useEffect, useState } from "preact/hooks";
import { api } from "./api";

type Loaded<T> = { data: T | undefined; error: unknown };

export function useApi<T>(path: string | null, tick: number): Loaded<T> {
  const [state, setState] = useState<Loaded<T>>({ data: undefined, error: undefined });
  useEffect(() => {
    if (!path) return;
    let current = true;
    api<T>("GET", path).then(
      (data) => current && setState({ data, error: undefined }),
      (error: unknown) => current && setState((old) => ({ data: old.data, error })),
    );
    return () => {
      current = false;
    };
  }, [path, tick]);
  return state;
}
