import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext } from "playwright-core";
import { inject } from "vitest";
import { launchChromium, launchChromiumProfile } from "./chromium.ts";

/** The Chromium that the run's global setup found (`chromium.ts`), headless and quiet. */
export const launchHeadlessChromium = (): Promise<Browser> => launchChromium(inject("chromiumPath"));

/**
 * The same Chromium with its own profile in a new temporary folder (`launchChromiumProfile`), removed when the
 * context's `close()` has ended: its "close" event comes while Chromium still writes the profile, and each run
 * left two in /tmp.
 */
export async function launchHeadlessChromiumProfile(options: {
  viewport: { width: number; height: number };
}): Promise<BrowserContext> {
  const folder = mkdtempSync(join(tmpdir(), "chromium-profile-"));
  const context = await launchChromiumProfile(inject("chromiumPath"), folder, options).catch((error: unknown) => {
    rmSync(folder, { recursive: true, force: true });
    throw error;
  });
  const close = context.close.bind(context);
  context.close = async (closeOptions) => {
    await close(closeOptions);
    rmSync(folder, { recursive: true, force: true });
  };
  return context;
}
