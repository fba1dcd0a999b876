// The API token: from SANDBOX_API_TOKEN, else read from (or created in) the data dir with mode 0600.
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const TOKEN_FILE = "api-token";

export function tokenPath(dataDir: string): string {
  return join(dataDir, TOKEN_FILE);
}

export function loadOrCreateToken(dataDir: string, envToken: string | undefined): string {
  if (envToken) return envToken;
  const path = tokenPath(dataDir);
  if (existsSync(path)) {
    // Tighten a file someone loosened by hand: the token is a credential.
    if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
    const token = readFileSync(path, "utf8").trim();
    if (token) return token;
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const token = randomBytes(32).toString("base64url");
  // `wx` fails if another process created the file first; then theirs wins.
  try {
    writeFileSync(path, token + "\n", { mode: 0o600, flag: "wx" });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    return readFileSync(path, "utf8").trim();
  }
  return token;
}
