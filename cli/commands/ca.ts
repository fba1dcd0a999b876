// `bun run ca`: the manager CA every VM trusts (fingerprint, expiry, or the certificate with --pem);
// `bun run ca rotate`: replace it with a new key.
import type { SandboxClient } from "../../sdk/index";
import { executeCommand, expectPositionals } from "../frame";
import { UsageError } from "../errors";
import { isoTime, timeCell } from "../format";
import { renderPairs, type Output } from "../output";

type CaView = Awaited<ReturnType<SandboxClient["ca"]["get"]>>;

function show(ca: CaView, out: Output): void {
  out.line(renderPairs([["FINGERPRINT", `sha256 ${ca.fingerprint}`], ["EXPIRES", timeCell(ca.notAfter, out)]], out.paint));
}

export function run(argv: string[]): Promise<number> {
  return executeCommand(
    {
      name: "ca",
      help: `usage: bun run ca [--pem] [--json]
       bun run ca rotate [--json]

The manager's own CA: every VM trusts it (its system store and SSL_CERT_FILE, NODE_EXTRA_CA_CERTS,
REQUESTS_CA_BUNDLE, GIT_SSL_CAINFO, CURL_CA_BUNDLE), and the egress proxy signs the certificates of the
hosts it intercepts with it. Its key stays in the manager's data dir and never enters a VM.

Without arguments: its SHA-256 fingerprint (as \`openssl x509 -fingerprint -sha256\` prints it) and when it
expires; --pem prints the certificate itself. rotate: a new CA with a new key replaces it at once; each VM
trusts the new one from its next command, which recreates the VM (its home volume is kept; processes
still running in it end).`,
      options: { pem: { type: "boolean" } },
    },
    argv,
    async ({ positionals, values, out, client }) => {
      const [action] = expectPositionals(positionals, ["action"], 1);
      if (action === undefined) {
        const ca = await client.ca.get();
        if (out.json) out.printJson({ fingerprint: ca.fingerprint, notAfter: isoTime(ca.notAfter), certificatePem: ca.certificatePem });
        else if (values.pem) process.stdout.write(ca.certificatePem);
        else show(ca, out);
        return;
      }
      if (action !== "rotate") throw new UsageError(`unknown action ${JSON.stringify(action)}: use \`bun run ca\` or \`bun run ca rotate\``);
      if (values.pem) throw new UsageError("--pem goes with `bun run ca`, not with rotate");
      const ca = await client.ca.rotate();
      if (out.json) {
        out.printJson({ fingerprint: ca.fingerprint, previousFingerprint: ca.previousFingerprint, notAfter: isoTime(ca.notAfter), certificatePem: ca.certificatePem });
        return;
      }
      out.line(`rotated the manager CA: sha256 ${ca.previousFingerprint} → ${out.paint.cyan(ca.fingerprint)}`);
      out.line("every VM trusts the new CA from its next command, which recreates it (its home volume is kept)");
      show(ca, out);
    },
  );
}
