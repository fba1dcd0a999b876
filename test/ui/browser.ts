// Debian's Chromium driven by playwright-core (never a downloaded browser), in a fresh profile removed on close.
import { rmSync } from "node:fs";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { makeTempDir } from "../helpers";

export const CHROMIUM = "/usr/bin/chromium";
// Without the background-networking flags Chromium keeps dialling Google's hosts, which this closed network refuses.
const FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

export type Browser = { context: BrowserContext; page: Page; close(): Promise<void> };

export async function openBrowser(): Promise<Browser> {
  const profile = makeTempDir("ss-chromium-");
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS, viewport: { width: 1100, height: 760 } });
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

export type AxeViolation = { id: string; impact: string | null; help: string; nodes: { target: string[] }[] };

/**
 * axe-core's WCAG A/AA rules over the page as it is now: the serious and critical violations. Evaluated over the
 * DevTools protocol, which the page's CSP (no inline script) does not govern.
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(AXE_SOURCE);
  const rules = JSON.stringify({ runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] } });
  const result = (await page.evaluate(`axe.run(document, ${rules})`)) as { violations: AxeViolation[] };
  return result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
}
