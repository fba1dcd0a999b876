// Test helper: an ExecSink that collects output as text and can wake a test when a marker appears.
import type { ExecRequest, ExecResult, ExecSink, RuntimeDriver } from "../../runtime/driver";

export type Captured = ExecResult & { stdout: string; stderr: string };

export function captureSink(onStdout?: (all: string) => void): ExecSink & { stdout(c: Uint8Array): void; text(): { stdout: string; stderr: string } } {
  const decoder = { out: new TextDecoder(), err: new TextDecoder() };
  let stdout = "";
  let stderr = "";
  return {
    stdout(chunk) {
      stdout += decoder.out.decode(chunk, { stream: true });
      onStdout?.(stdout);
    },
    stderr(chunk) {
      stderr += decoder.err.decode(chunk, { stream: true });
    },
    text: () => ({ stdout, stderr }),
  };
}

/** Runs one command and returns its result together with everything it printed. */
export async function run(driver: RuntimeDriver, name: string, request: Partial<ExecRequest> & { argv: string[] }): Promise<Captured> {
  const sink = captureSink();
  const result = await driver.exec(name, { cwd: "/", ...request }, sink);
  return { ...result, ...sink.text() };
}

/** `sh -c script` in the VM. */
export function sh(driver: RuntimeDriver, name: string, script: string, request: Partial<ExecRequest> = {}): Promise<Captured> {
  return run(driver, name, { ...request, argv: ["sh", "-c", script] });
}
