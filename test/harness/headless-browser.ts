import { chromium, type Browser } from "playwright-core";

/** The system's Chromium (installed by .ci/run), headless and quiet: no sandbox for root, no background traffic. */
export const launchHeadlessChromium = (): Promise<Browser> =>
  chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
