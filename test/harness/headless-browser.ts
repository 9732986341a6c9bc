import type { Browser } from "playwright-core";
import { inject } from "vitest";
import { launchChromium } from "./chromium.ts";

/** The Chromium that the run's global setup found (`chromium.ts`), headless and quiet. */
export const launchHeadlessChromium = (): Promise<Browser> => launchChromium(inject("chromiumPath"));
