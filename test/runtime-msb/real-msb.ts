// The real msb binary for the tests that drive it, and where no microVM can boot on this host, a copy of
// it whose boots fail at once. On a kvm_pvm host a boot attempt keeps the host kernel busy for ~13 s of
// CPU before KVM_EXIT_INTERNAL_ERROR; run in a private mount namespace with /dev/kvm masked, msb parses the
// same argv, stores the same record, keeps the same name taken, and fails in ~30 ms with its own error
// ("KvmApiVersion(-1)"). Used only where the probe says boots fail anyway: on a host that boots, the
// tests get the real binary and real boots.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MsbDriver } from "../../runtime/msb";

export type RealMsb = {
  /** The binary to run (undefined: none installed): the real one, or the wrapper around it. */
  path: string | undefined;
  bootWorks: boolean;
  /** Whether boots were made to fail at once (see the top of this file). */
  bootsFailFast: boolean;
  cleanUp(): void;
};

export async function realMsb(): Promise<RealMsb> {
  const probe = new MsbDriver({});
  const binary = probe.binary?.path;
  if (!binary) return { path: undefined, bootWorks: false, bootsFailFast: false, cleanUp: () => undefined };
  const bootWorks = (await probe.probe()).available;
  const canMask = !bootWorks && process.getuid?.() === 0 && Bun.which("unshare") !== null;
  if (!canMask) return { path: binary, bootWorks, bootsFailFast: false, cleanUp: () => undefined };
  const dir = mkdtempSync(join(tmpdir(), "ss-msb-nokvm-"));
  const wrapper = join(dir, "msb");
  writeFileSync(
    wrapper,
    `#!/bin/sh\nexec unshare -m sh -c 'if [ -e /dev/kvm ]; then mount --bind /dev/null /dev/kvm || exit 125; fi; exec "$0" "$@"' ${JSON.stringify(binary)} "$@"\n`,
  );
  chmodSync(wrapper, 0o755);
  return { path: wrapper, bootWorks, bootsFailFast: true, cleanUp: () => rmSync(dir, { recursive: true, force: true }) };
}
