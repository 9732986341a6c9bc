import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import axe from "axe-core";
import type { BrowserContext, Page } from "playwright-core";
import { expect } from "vitest";

/** Where every run leaves one screenshot per screen and size, for review (git-ignored; no pixel comparison). */
const screenshots = new URL("../.screenshots/", import.meta.url);

const phone = { width: 390, height: 844 };
const desktop = { width: 1280, height: 800 };

export const phoneViewport = phone;

/** base64url SHA-256 of the parts, in order. */
export const sha256url = (...parts: (Buffer | string)[]) => {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  return hash.digest("base64url");
};

/** RFC 8785 for the JSON a card holds (strings, integers, booleans, null, arrays, objects), written here independently. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object")
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(",")}}`;
  return JSON.stringify(value);
}

/**
 * axe-core run in the page (its source evaluated through DevTools, which the page's CSP does not govern):
 * no serious or critical violation.
 */
async function expectAccessible(page: Page, screen: string): Promise<void> {
  await page.evaluate(axe.source);
  const violations = await page.evaluate(async () => {
    const found = await (window as unknown as { axe: typeof axe }).axe.run(document, {
      resultTypes: ["violations"],
    });
    return found.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      targets: v.nodes.map((n) => n.target.join(" ")),
    }));
  });
  const serious = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(serious, `${screen}: ${JSON.stringify(serious, null, 2)}`).toEqual([]);
}

/** The screen checked with axe, then photographed at phone and at desktop size (the page ends at phone size). */
export async function reviewScreen(page: Page, name: string): Promise<void> {
  await expectAccessible(page, name);
  mkdirSync(screenshots, { recursive: true });
  await page.screenshot({ path: new URL(`web-app-${name}-phone.png`, screenshots).pathname, fullPage: true });
  await page.setViewportSize(desktop);
  await page.screenshot({ path: new URL(`web-app-${name}-desktop.png`, screenshots).pathname, fullPage: true });
  await page.setViewportSize(phone);
}

/** A browser page with the DevTools virtual authenticator (a platform passkey that verifies the user). */
export async function pageWithAuthenticator(context: BrowserContext) {
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  /** The passkeys the authenticator holds, with their signature counters (one per assertion). */
  const credentials = async () => (await cdp.send("WebAuthn.getCredentials", { authenticatorId })).credentials;
  // Every Content-Security-Policy refusal the page reports: the page must need none.
  const policyViolations: string[] = [];
  page.on("console", (message) => {
    if (message.text().includes("Content Security Policy")) policyViolations.push(message.text());
  });
  return { page, credentials, policyViolations };
}

/** Signs in through the development identity provider's page as a new person; ends on the inbox. */
export async function signInAsNewPerson(page: Page, origin: string): Promise<string> {
  await page.goto(`${origin}/app`);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByLabel("Sign in as").fill(`web-${crypto.randomUUID()}`);
  await page.getByRole("button", { name: "Continue" }).click();
  await page.getByRole("heading", { name: "Inbox", level: 1 }).waitFor();
  return (await page.evaluate(() => sessionStorage.getItem("svc.id_token"))) ?? "";
}
