import { ensureDebianProgram, type Log } from "@svc/local-mesh/process-tools";
import { type Browser, type BrowserContext, chromium } from "playwright-core";

/** Found on PATH, or installed with apt as root: never skipped. */
export const ensureChromiumInstalled = (log: Log): Promise<string> =>
  ensureDebianProgram(
    { program: "chromium", debianPackage: "chromium", alternative: "put a Chromium binary named chromium on PATH" },
    log,
  );

/**
 * The Chromium at `executablePath`, headless and quiet: no sandbox for root, no background traffic. The
 * tests and the widget benchmark start it the same way.
 */
const quietArgs = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export const launchChromium = (executablePath: string): Promise<Browser> =>
  chromium.launch({ executablePath, args: quietArgs });

/**
 * The same Chromium with a profile in `userDataDir` instead of an incognito one: Chromium judges an app
 * installable, and keeps notifications, only in a profile of its own.
 */
export const launchChromiumProfile = (
  executablePath: string,
  userDataDir: string,
  options: { viewport: { width: number; height: number } },
): Promise<BrowserContext> =>
  chromium.launchPersistentContext(userDataDir, { executablePath, args: quietArgs, viewport: options.viewport });
