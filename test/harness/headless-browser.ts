import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { inject } from "vitest";
import { launchChromium, launchChromiumProfile } from "./chromium.ts";

/** The Chromium that the run's global setup found (`chromium.ts`), headless and quiet. */
export const launchHeadlessChromium = (): Promise<Browser> => launchChromium(inject("chromiumPath"));

/** The same Chromium with its own profile in a new temporary folder (`launchChromiumProfile`). */
export const launchHeadlessChromiumProfile = (options: { viewport: { width: number; height: number } }) =>
  launchChromiumProfile(inject("chromiumPath"), mkdtempSync(join(tmpdir(), "chromium-profile-")), options);
