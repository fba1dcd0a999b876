// Upstream response → guest bytes: framing, redaction, 1xx, truncation, refused compressed answers.
import { describe, expect, test } from "bun:test";
import { ChunkedDecodeError, ChunkedDecoder } from "../../egress/chunked-decoder";
import { ResponseRewriter, UpstreamResponseError, type ResponseRewriteOptions } from "../../egress/response-rewriter";
import { SecretRedactor } from "../../egress/secret-redactor";

const SECRET = "s3cr3t-value-123";
const redactor = () => new SecretRedactor([{ name: "TOKEN", find: SECRET, replacement: "PLACEHOLDER_TOKEN" }]);
const base: ResponseRewriteOptions = { requestMethod: "GET", clientVersion: "HTTP/1.1", redactor: null, refuseEncoded: false, maxHeadBytes: 1024 };

/** Feeds `chunks` (split as given) and the upstream close; returns the guest's bytes and completeness. */
function feed(options: Partial<ResponseRewriteOptions>, chunks: string[]): { text: string; complete: boolean } {
  const rewriter = new ResponseRewriter({ ...base, ...options });
  const out = chunks.flatMap((c) => rewriter.push(Buffer.from(c, "latin1")));
  const end = rewriter.end();
  return { text: Buffer.concat([...out, ...end.out]).toString("latin1"), complete: end.complete };
}

describe("ResponseRewriter", () => {
  test("no secrets, Content-Length → body verbatim, Connection: close, keep-alive headers dropped", () => {
    const { text, complete } = feed({}, ["HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\nhello"]);
    expect(text).toBe("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
    expect(complete).toBe(true);
  });

  test("secrets configured, Content-Length body with the value split → re-chunked, value → placeholder", () => {
    const body = `echo ${SECRET} end`;
    const head = `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\nX-Echo: ${SECRET}\r\n\r\n`;
    const cut = head.length + 9;
    const { text, complete } = feed({ redactor: redactor() }, [(head + body).slice(0, cut), (head + body).slice(cut)]);
    expect(text).not.toContain(SECRET);
    expect(text).toStartWith("HTTP/1.1 200 OK\r\nX-Echo: PLACEHOLDER_TOKEN\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
    expect(decodeChunked(text.slice(text.indexOf("\r\n\r\n") + 4))).toBe("echo PLACEHOLDER_TOKEN end");
    expect(complete).toBe(true);
  });

  test("chunked upstream body with the value across chunk boundaries → decoded, redacted, re-chunked", () => {
    const upstream = `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7\r\nab s3cr\r\n${(SECRET.length - 4 + 3).toString(16)}\r\n${SECRET.slice(4)} cd\r\n0\r\nX-Trailer: t\r\n\r\n`;
    for (let cut = 1; cut < upstream.length; cut += 3) {
      const { text, complete } = feed({ redactor: redactor() }, [upstream.slice(0, cut), upstream.slice(cut)]);
      expect(decodeChunked(text.slice(text.indexOf("\r\n\r\n") + 4))).toBe("ab PLACEHOLDER_TOKEN cd");
      expect(complete).toBe(true);
    }
  });

  test("HTTP/1.0 guest → close-delimited output, no chunking", () => {
    const { text } = feed({ redactor: redactor(), clientVersion: "HTTP/1.0" }, [`HTTP/1.1 200 OK\r\nContent-Length: ${SECRET.length}\r\n\r\n${SECRET}`]);
    expect(text).toBe("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nPLACEHOLDER_TOKEN");
  });

  test("close-delimited body → redacted until the upstream closes", () => {
    const { text, complete } = feed({ redactor: redactor() }, ["HTTP/1.1 200 OK\r\n\r\nx ", SECRET.slice(0, 3), SECRET.slice(3)]);
    expect(text).toBe("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nx PLACEHOLDER_TOKEN");
    expect(complete).toBe(true);
  });

  test("100 Continue then 200 → both heads passed on", () => {
    const { text } = feed({}, ["HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"]);
    expect(text).toBe("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
  });

  test("HEAD and 204 → no body expected, complete after the head", () => {
    expect(feed({ requestMethod: "HEAD", redactor: redactor() }, ["HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n"]).complete).toBe(true);
    expect(feed({}, ["HTTP/1.1 204 No Content\r\n\r\n"]).complete).toBe(true);
  });

  test("bytes after a complete body → discarded", () => {
    expect(feed({}, ["HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA"]).text).toEndWith("\r\n\r\nok");
  });

  test("body cut short → complete: false (the guest must see a broken response)", () => {
    expect(feed({}, ["HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"]).complete).toBe(false);
    const chunked = feed({ redactor: redactor() }, ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"]);
    expect(chunked.complete).toBe(false);
    expect(chunked.text).not.toContain("0\r\n\r\n");
  });

  const refused: Array<[string, Partial<ResponseRewriteOptions>, string[]]> = [
    ["no response at all", {}, []],
    ["a malformed status line", {}, ["HTTP/1.1 OK\r\n\r\n"]],
    ["a head over the limit", { maxHeadBytes: 64 }, [`HTTP/1.1 200 OK\r\nX-Big: ${"a".repeat(100)}\r\n\r\n`]],
    ["conflicting Content-Lengths", {}, ["HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"]],
    ["a gzip answer to a request that carried a secret", { redactor: redactor(), refuseEncoded: true }, ["HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 1\r\n\r\nx"]],
    ["a bad chunk size", { redactor: redactor() }, ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"]],
  ];
  for (const [what, options, chunks] of refused) {
    test(`${what} → UpstreamResponseError`, () => {
      expect(() => feed(options, chunks)).toThrow(UpstreamResponseError);
    });
  }

  test("a malformed head quoting the value → the error message carries the placeholder instead", () => {
    const error = (() => {
      try {
        feed({ redactor: redactor() }, [`HTTP/1.1 200 OK\r\nBad Header ${SECRET}\r\n\r\n`]);
      } catch (e) {
        return e as Error;
      }
    })();
    expect(error?.message).toContain("PLACEHOLDER_TOKEN");
    expect(error?.message).not.toContain(SECRET);
  });

  test("a gzip answer when no secret went out → passed on", () => {
    expect(feed({ redactor: redactor(), refuseEncoded: false }, ["HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 1\r\n\r\nx"]).complete).toBe(true);
  });
});

describe("ChunkedDecoder", () => {
  test("extensions, trailers, and bytes after the end → data and extra", () => {
    const decoder = new ChunkedDecoder();
    const { data, extra } = decoder.push(Buffer.from("3;ext=1\r\nabc\r\n0\r\nT: 1\r\n\r\nNEXT"));
    expect(Buffer.concat(data).toString()).toBe("abc");
    expect(extra.toString()).toBe("NEXT");
    expect(decoder.done).toBe(true);
  });

  test("data not followed by CRLF → ChunkedDecodeError", () => {
    expect(() => new ChunkedDecoder().push(Buffer.from("3\r\nabcX\r\n"))).toThrow(ChunkedDecodeError);
  });
});

function decodeChunked(text: string): string {
  const decoder = new ChunkedDecoder();
  const { data } = decoder.push(Buffer.from(text, "latin1"));
  expect(decoder.done).toBe(true);
  return Buffer.concat(data).toString("latin1");
}
