// Shared by the attack suites: while an attack runs, the manager must keep answering. Each attack test
// races its attack against repeated health checks, each of which must answer within 1 s.
import type { TestApp } from "../helpers";

export const HEALTH_DEADLINE_MS = 1_000;

/** One health check that must answer within `HEALTH_DEADLINE_MS`; throws otherwise. */
export async function expectHealthWithin1s(app: Pick<TestApp, "client">): Promise<void> {
  const started = performance.now();
  const timer = Promise.withResolvers<never>();
  const id = setTimeout(() => timer.reject(new Error(`health did not answer within ${HEALTH_DEADLINE_MS} ms: the manager is blocked`)), HEALTH_DEADLINE_MS);
  try {
    await Promise.race([app.client.health(), timer.promise]);
  } finally {
    clearTimeout(id);
  }
  const tookMs = performance.now() - started;
  if (tookMs > HEALTH_DEADLINE_MS) throw new Error(`health took ${Math.round(tookMs)} ms`);
}

/**
 * Runs `attack` while checking health every 100 ms; resolves with the attack's result once both the
 * attack has settled and at least one health check has passed. Any slow health check fails the test.
 */
export async function whileResponsive<T>(app: Pick<TestApp, "client">, attack: () => Promise<T>): Promise<T> {
  let done = false;
  const checks = (async () => {
    let passed = 0;
    while (!done || passed === 0) {
      await expectHealthWithin1s(app);
      passed++;
      if (!done) await Bun.sleep(100);
    }
  })();
  try {
    return await attack();
  } finally {
    done = true;
    await checks;
  }
}
