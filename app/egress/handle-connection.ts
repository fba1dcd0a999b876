// One guest connection: parse, check name, resolve once, check addresses, connect, then tunnel or forward.
import type { Socket } from "node:net";
import type { Logger } from "../log";
import { forwardHttp } from "./forward-http";
import { endGracefully } from "./graceful-close";
import { parseRequestHead, type RequestHead } from "./http-head";
import { parseIp } from "./ip-address";
import { checkAddress, checkName, compilePolicyLenient, formatTarget, type CompiledPolicy, type Decision, type Denial, type EgressTarget, type Policy } from "./policy";
import { deniedResponse, plainResponse } from "./proxy-responses";
import { HeadReadError, readHead } from "./read-head";
import { buildUpstreamRequest } from "./request-rewrite";
import { ResponseRewriter } from "./response-rewriter";
import { SecretRedactor } from "./secret-redactor";
import { compileSecrets, redactionPatterns, secretsForTarget, type SecretRule } from "./secrets";
import { parseAbsoluteUrl, parseAuthority } from "./target";
import { runTunnel } from "./tunnel";
import { UpstreamError, connectFirst, resolveTarget, type Resolver } from "./upstream";

export type EgressLimits = {
  /** Request and response heads larger than this get 431 / 502. */
  maxHeadBytes: number;
  headTimeoutMs: number;
  resolveTimeoutMs: number;
  connectTimeoutMs: number;
  /** A tunnel or forward with no bytes either way for this long is closed. */
  idleTimeoutMs: number;
  /** After the response, unread guest bytes are drained this long before the socket is destroyed. */
  lingerMs: number;
  maxConnections: number;
  /** Allowed addresses tried in order before giving up. */
  maxConnectAttempts: number;
};

export type ConnectionContext = {
  policy: () => Policy;
  resolve: Resolver;
  secrets: () => readonly SecretRule[];
  hostAddresses: () => readonly string[];
  howToAllow: string;
  log: Logger;
  limits: EgressLimits;
  /** Registers an upstream socket so closing the proxy can destroy it. */
  track: (socket: Socket) => void;
};

type Request = { head: RequestHead; target: EgressTarget; originForm: string | null; rest: Buffer };

function answer(client: Socket, response: Buffer, ctx: ConnectionContext): void {
  endGracefully(client, ctx.limits.lingerMs, response);
}

async function readRequest(client: Socket, ctx: ConnectionContext): Promise<Request | null> {
  let read: { head: Buffer; rest: Buffer };
  try {
    read = await readHead(client, ctx.limits.maxHeadBytes, ctx.limits.headTimeoutMs);
  } catch (error) {
    if (error instanceof HeadReadError && error.status !== null) answer(client, plainResponse(error.status, `session-sandbox egress proxy: ${error.message}`), ctx);
    else client.destroy();
    return null;
  }
  const head = parseRequestHead(read.head.toString("latin1"));
  if (!head.ok) return refuse(client, 400, head.reason, ctx);
  if (head.value.method === "CONNECT") {
    const target = parseAuthority(head.value.target, null);
    return target.ok ? { head: head.value, target: target.value, originForm: null, rest: read.rest } : refuse(client, 400, target.reason, ctx);
  }
  const url = parseAbsoluteUrl(head.value.target);
  if (!url.ok) return refuse(client, 400, url.reason, ctx);
  return { head: head.value, target: url.value.target, originForm: url.value.originForm, rest: read.rest };
}

function refuse(client: Socket, status: number, reason: string, ctx: ConnectionContext): null {
  answer(client, plainResponse(status, `session-sandbox egress proxy: ${reason}`), ctx);
  return null;
}

function snapshotPolicy(ctx: ConnectionContext): CompiledPolicy | Denial {
  try {
    const { compiled, problems } = compilePolicyLenient(ctx.policy());
    if (problems.length > 0) ctx.log.warn("egress policy entries ignored", { problems });
    return compiled;
  } catch (error) {
    // A policy the proxy cannot read allows nothing.
    ctx.log.error("egress policy unusable", { error: (error as Error).message });
    return { allowed: false, rule: "policy unavailable", reason: "the session's network policy could not be read; nothing is allowed" };
  }
}

/** Resolves (at most once), then checks each address; returns the allowed ones in resolver order. */
async function decide(request: Request, policy: CompiledPolicy, ctx: ConnectionContext): Promise<{ decision: Decision; addresses: string[] }> {
  const name = checkName(policy, request.target);
  if (name.kind === "denied") return { decision: name.decision, addresses: [] };
  const host = request.target.host;
  const addresses = name.addresses ?? (parseIp(host) !== null ? [host] : await resolveTarget(ctx.resolve, host, ctx.limits.resolveTimeoutMs));
  const hostAddresses = ctx.hostAddresses();
  const checked = addresses.map((address) => ({ address, decision: checkAddress(policy, request.target, name.nameRule, address, { hostAddresses }) }));
  const allowed = checked.filter((c) => c.decision.allowed);
  return { decision: (allowed[0] ?? checked[0])?.decision as Decision, addresses: allowed.map((c) => c.address) };
}

export async function handleConnection(client: Socket, ctx: ConnectionContext): Promise<void> {
  client.on("error", () => client.destroy());
  const request = await readRequest(client, ctx);
  if (request === null) return;
  const target = formatTarget(request.target);
  const kind = request.originForm === null ? "connect" : "http";
  const prepared = request.originForm === null ? null : prepareHttp(client, request, ctx);
  if (prepared === null && request.originForm !== null) return;
  const policy = snapshotPolicy(ctx);
  try {
    const { decision, addresses } = "mode" in policy ? await decide(request, policy, ctx) : { decision: policy, addresses: [] };
    if (!decision.allowed) {
      ctx.log.info("egress denied", { kind, target, rule: decision.rule });
      return answer(client, deniedResponse(decision, request.target, ctx.howToAllow), ctx);
    }
    if (client.destroyed) return;
    const { socket: upstream, address } = await connectFirst(addresses, request.target.port, ctx.limits.connectTimeoutMs, ctx.limits.maxConnectAttempts);
    ctx.track(upstream);
    if (client.destroyed) return void upstream.destroy();
    // Secret names only: values never reach a log line.
    const secrets = prepared?.usedSecrets.length ? { secrets: prepared.usedSecrets } : {};
    ctx.log.info("egress allowed", { kind, target, address, rule: decision.rule, ...secrets });
    if (prepared === null) return await runTunnel(client, upstream, request.rest, ctx.limits.idleTimeoutMs);
    const onUpstreamError = (reason: string) => ctx.log.warn("egress upstream response refused", { target, reason });
    const onSettled = () => {
      const hits = prepared.redactor?.hits;
      if (hits && hits.size > 0) ctx.log.info("egress secret redacted from response", { target, secrets: [...hits] });
    };
    const { idleTimeoutMs, lingerMs } = ctx.limits;
    await forwardHttp(client, upstream, prepared.head, request.rest, prepared.rewriter, { idleTimeoutMs, lingerMs, onUpstreamError, onSettled });
  } catch (error) {
    if (!(error instanceof UpstreamError)) throw error;
    ctx.log.info("egress upstream unreachable", { kind, target, status: error.status, reason: error.message });
    answer(client, plainResponse(error.status, `session-sandbox egress proxy: ${error.message}`), ctx);
  }
}

type PreparedHttp = { head: Buffer; rewriter: ResponseRewriter; redactor: SecretRedactor | null; usedSecrets: string[] };

/** The upstream head with secrets substituted, and the rewriter that redacts them from the answer. */
function prepareHttp(client: Socket, request: Request, ctx: ConnectionContext): PreparedHttp | null {
  let rules: readonly SecretRule[] = [];
  try {
    rules = ctx.secrets();
  } catch (error) {
    // Without rules nothing is substituted: placeholders go out as placeholders, which leaks nothing.
    ctx.log.error("egress secrets unavailable", { error: (error as Error).message });
  }
  const { secrets, problems } = compileSecrets(rules);
  for (const p of problems) ctx.log.warn("egress secret rule unusable", { secret: p.name, problem: p.problem });
  const built = buildUpstreamRequest(request.head, request.target, request.originForm as string, secretsForTarget(secrets, request.target));
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
