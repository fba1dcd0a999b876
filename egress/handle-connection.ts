// One guest connection: parse, check name, resolve once, check addresses, connect, then tunnel or forward.
import type { Socket } from "node:net";
import { answer, currentSecrets, forwardPrepared, prepareHttp, refuse, type PreparedHttp } from "./forward-request";
import { parseRequestHead, type RequestHead } from "./http-head";
import type { ConnectionContext, EgressDenial, Interception } from "./connection-context";
import { interceptTunnel, needsInterception } from "./intercept";
import { parseIp } from "./ip-address";
import { checkAddress, checkName, compilePolicyLenient, formatTarget, type CompiledPolicy, type Decision, type Denial, type EgressTarget } from "./policy";
import { deniedResponse, plainResponse } from "./proxy-responses";
import { HeadReadError, readHead } from "./read-head";
import { parseAbsoluteUrl, parseAuthority } from "./target";
import { runTunnel } from "./tunnel";
import { UpstreamError, connectFirst, resolveTarget } from "./upstream";

type Request = { head: RequestHead; target: EgressTarget; originForm: string | null; rest: Buffer };

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
  const http = request.originForm === null ? null : { ...request, originForm: request.originForm };
  const secrets = currentSecrets(ctx);
  const prepared = http === null ? null : prepareHttp(client, http, ctx, secrets);
  if (http !== null && prepared === null) return;
  // A CONNECT to a host that receives secrets is opened up, or not at all.
  const intercept = http === null && needsInterception(secrets, request.target);
  if (intercept && !ctx.interception) {
    const reason = `${target} receives secrets, and this proxy cannot open its TLS (no manager CA), so it is not tunnelled: a tunnel would let the guest read a stored secret back`;
    ctx.denied({ kind: "connect", target, rule: "secret host without interception", reason });
    return void refuse(client, 403, reason, ctx);
  }
  let kind: EgressDenial["kind"] = http !== null ? "http" : intercept ? "intercept" : "connect";
  const policy = snapshotPolicy(ctx);
  try {
    const { decision, addresses } = "mode" in policy ? await decide(request, policy, ctx) : { decision: policy, addresses: [] };
    if (!decision.allowed) {
      ctx.denied({ kind, target, rule: decision.rule, reason: decision.reason, allowEntry: decision.allowEntry });
      return answer(client, deniedResponse(decision, request.target, ctx.howToAllow), ctx);
    }
    if (secrets.length > 0) ctx.secretDestinations.learnFromTarget(secrets, request.target, addresses);
    // A CONNECT by another name (or an IP literal) to where a secret host lives: opened up, or not at all.
    const secretHostThere = kind === "connect" && secrets.length > 0 ? await ctx.secretDestinations.ownerOf(secrets, addresses, request.target.port) : undefined;
    if (secretHostThere !== undefined) {
      // By an IP literal the upstream's certificate cannot be checked for a name, so it is refused too.
      if (!ctx.interception || parseIp(request.target.host) !== null) {
        const reason = `${target} reaches the address of ${secretHostThere}, which receives secrets; a tunnel there would let the guest read a stored secret back, so it is not opened: connect by the name ${secretHostThere}`;
        ctx.denied({ kind, target, rule: "address of a secret host", reason });
        return void refuse(client, 403, reason, ctx);
      }
      kind = "intercept";
    }
    if (client.destroyed) return;
    const { socket: upstream, address } = await connectFirst(addresses, request.target.port, ctx.limits.connectTimeoutMs, ctx.limits.maxConnectAttempts);
    ctx.track(upstream);
    if (client.destroyed) return void upstream.destroy();
    // Secret names only: values never reach a log line.
    const used = prepared?.usedSecrets.length ? { secrets: prepared.usedSecrets } : {};
    ctx.log.info("egress allowed", { kind, target, address, rule: decision.rule, ...used });
    if (prepared?.usedSecrets.length) ctx.onSubstituted(prepared.usedSecrets, request.target.host);
    if (http !== null) return await forwardPrepared(client, upstream, prepared as PreparedHttp, http, ctx);
    if (kind === "intercept") return await interceptTunnel(client, upstream, request.rest, request.target, secrets, ctx as ConnectionContext & { interception: Interception });
    return await runTunnel(client, upstream, request.rest, ctx.limits.idleTimeoutMs);
  } catch (error) {
    if (!(error instanceof UpstreamError)) throw error;
    ctx.log.info("egress upstream unreachable", { kind, target, status: error.status, reason: error.message });
    answer(client, plainResponse(error.status, `session-sandbox egress proxy: ${error.message}`), ctx);
  }
}
