// The dashboard's only door to the manager: /api with the Bearer token, exactly as the SDK calls it.
const TOKEN_KEY = "session-sandbox.token";

export const tokenStore = {
  get: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  set: (token: string) => sessionStorage.setItem(TOKEN_KEY, token),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

/** Thrown when the API answers with an error status: its `{ code, message }`, or the status text. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function authHeaders(): Record<string, string> {
  return { authorization: `Bearer ${tokenStore.get() ?? ""}` };
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { ...authHeaders(), accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let data: unknown = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const err = (data ?? {}) as { code?: string; message?: string };
    throw new ApiError(res.status, err.code ?? `HTTP_${res.status}`, err.message ?? (text || res.statusText));
  }
  return data as T;
}

export function describeError(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.status === 401) return `The token was refused (401 ${error.code}): ${error.message}. Sign in again with the manager's API token.`;
    return `${error.message} (${error.status} ${error.code})`;
  }
  return error instanceof Error ? error.message : String(error);
}
