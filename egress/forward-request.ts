// One HTTP request forwarded to an allowed upstream, plain or inside an intercepted tunnel: placeholders
// substituted in the request line and headers for the rules matching the target, the answer redacted of
// every configured value, and every error text redacted too before a guest or a log line sees it.
import type { Socket } from "node:net";
import { forwardHttp } from "./forward-http";
import { endGracefully } from "./graceful-close";
import type { RequestHead } from "./http-head";
import type { EgressTarget } from "./policy";
import { formatTarget } from "./policy";
import { plainResponse } from "./proxy-responses";
import { buildUpstreamRequest } from "./request-rewrite";
import { ResponseRewriter } from "./response-rewriter";
import { SecretRedactor } from "./secret-redactor";
import { compileSecrets, redactionPatterns, secretsForTarget, type CompiledSecret, type SecretRule } from "./secrets";
import type { ConnectionContext } from "./connection-context";

type HttpRequest = { head: RequestHead; target: EgressTarget; originForm: string; rest: Buffer };

export type PreparedHttp = { head: Buffer; rewriter: ResponseRewriter; redactor: SecretRedactor | null; usedSecrets: string[] };

export function answer(client: Socket, response: Buffer, ctx: ConnectionContext): void {
  endGracefully(client, ctx.limits.lingerMs, response);
}

export function refuse(client: Socket, status: number, reason: string, ctx: ConnectionContext): null {
  answer(client, plainResponse(status, `session-sandbox egress proxy: ${reason}`), ctx);
  return null;
}

/** The usable secret rules of this moment, read once per guest connection; an unreadable list substitutes nothing (fails closed). */
export function currentSecrets(ctx: ConnectionContext): CompiledSecret[] {
  let rules: readonly SecretRule[] = [];
  try {
    rules = ctx.secrets();
  } catch (error) {
    // Without rules nothing is substituted: placeholders go out as placeholders, which leaks nothing.
    ctx.log.error("egress secrets unavailable", { error: (error as Error).message });
  }
  const { secrets, problems } = compileSecrets(rules);
  for (const p of problems) ctx.log.warn("egress secret rule unusable", { secret: p.name, problem: p.problem });
  return secrets;
}

/** The upstream head with secrets substituted, and the rewriter that redacts them from the answer. */
export function prepareHttp(client: Socket, request: HttpRequest, ctx: ConnectionContext, secrets: readonly CompiledSecret[]): PreparedHttp | null {
  const built = buildUpstreamRequest(request.head, request.target, request.originForm, secretsForTarget(secrets, request.target));
  if (!built.ok) return refuse(client, 400, built.reason, ctx);
  // Every configured value is redacted from every answer, not only the listed hosts' answers.
  const redactor = secrets.length > 0 ? new SecretRedactor(redactionPatterns(secrets)) : null;
  const rewriter = new ResponseRewriter({
    requestMethod: request.head.method,
    clientVersion: request.head.version,
    redactor,
    refuseEncoded: built.value.usedSecrets.length > 0,
    maxHeadBytes: ctx.limits.maxHeadBytes,
  });
  return { head: built.value.head, rewriter, redactor, usedSecrets: built.value.usedSecrets };
}

/** Text that may quote upstream bytes, with every configured value replaced by its placeholder. */
function redactText(prepared: PreparedHttp, text: string): string {
  return prepared.redactor ? prepared.redactor.redactAll(Buffer.from(text, "latin1")).toString("latin1") : text;
}

/** Sends the prepared request on `upstream` and the rewritten answer to `client`; resolves when both close. */
export async function forwardPrepared(client: Socket, upstream: Socket, prepared: PreparedHttp, request: HttpRequest, ctx: ConnectionContext): Promise<void> {
  const target = formatTarget(request.target);
  const onUpstreamError = (reason: string) => ctx.log.warn("egress upstream response refused", { target, reason });
  const onSettled = () => {
    const hits = prepared.redactor?.hits;
    if (hits && hits.size > 0) ctx.log.info("egress secret redacted from response", { target, secrets: [...hits] });
  };
  const { idleTimeoutMs, lingerMs } = ctx.limits;
  await forwardHttp(client, upstream, prepared.head, request.rest, prepared.rewriter, { idleTimeoutMs, lingerMs, onUpstreamError, onSettled, redact: (text) => redactText(prepared, text) });
}
