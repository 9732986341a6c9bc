import { ensureDebianProgram, type Log } from "@svc/local-mesh/process-tools";
import { type Browser, chromium } from "playwright-core";
import { inject } from "vitest";

/** Found on PATH, or installed with apt as root, by the run's global setup: never skipped. */
export const ensureChromiumInstalled = (log: Log): Promise<string> =>
  ensureDebianProgram(
    { program: "chromium", debianPackage: "chromium", alternative: "put a Chromium binary named chromium on PATH" },
    log,
  );

/** The Chromium that global setup found, headless and quiet: no sandbox for root, no background traffic. */
export const launchHeadlessChromium = (): Promise<Browser> =>
  chromium.launch({
    executablePath: inject("chromiumPath"),
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
