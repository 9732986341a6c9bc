import type { BrowserContext } from "playwright-core";
import { runSvcctl } from "./svcctl.ts";

/** What a page passes to `navigator.credentials.get({digital: {requests: [...]}})`: one request. */
export type DigitalRequest = { protocol: string; data: { request: string } };

/**
 * A browser with the Digital Credentials API: `DigitalCredential` and `navigator.credentials.get`
 * for `digital` requests, which hand the request and the page's origin (as the browser knows it) to
 * `wallet` in this process; what it returns comes back to the page as the credential's `data`.
 * Answers the requests seen, in order.
 */
export async function withDigitalCredentials(
  context: BrowserContext,
  wallet: (request: DigitalRequest, origin: string) => Promise<unknown>,
): Promise<DigitalRequest[]> {
  const seen: DigitalRequest[] = [];
  await context.exposeBinding("svcTestWallet", async (source, request) => {
    seen.push(request);
    return wallet(request, new URL(source.frame.url()).origin);
  });
  await context.addInitScript(() => {
    class DigitalCredential {
      readonly protocol: string;
      readonly data: unknown;
      constructor(protocol: string, data: unknown) {
        this.protocol = protocol;
        this.data = data;
      }
    }
    const bound = window as unknown as {
      DigitalCredential: typeof DigitalCredential;
      svcTestWallet: (request: unknown) => Promise<unknown>;
    };
    bound.DigitalCredential = DigitalCredential;
    const get = navigator.credentials.get.bind(navigator.credentials);
    navigator.credentials.get = (async (options?: { digital?: { requests: { protocol: string }[] } }) => {
      if (!options?.digital) return get(options as CredentialRequestOptions);
      const [request] = options.digital.requests;
      return new DigitalCredential(request?.protocol ?? "", await bound.svcTestWallet(request));
    }) as typeof navigator.credentials.get;
  });
  return seen;
}

/**
 * The development wallet's same-device side (`svcctl wallet dc-api`) for a person born on `birthdate`:
 * the `data` it would hand the page for a request object seen from `origin`. Throws when svcctl fails.
 */
export async function developmentDcApiAnswer(
  target: { consoleUrl: string; consoleToken: string },
  input: { requestObject: string; origin: string; birthdate: string; format?: string },
): Promise<Record<string, unknown>> {
  const run = await runSvcctl(target, [
    "wallet",
    "dc-api",
    "--request-object",
    input.requestObject,
    "--origin",
    input.origin,
    "--birthdate",
    input.birthdate,
    ...(input.format ? ["--format", input.format] : []),
  ]);
  if (run.code !== 0) throw new Error(`svcctl wallet dc-api failed (${run.code}): ${run.stderr}`);
  return JSON.parse(run.stdout);
}
