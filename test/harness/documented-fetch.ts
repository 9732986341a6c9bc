import { type DocumentedAnswer, describes, expectDocumented, prepareDocumented } from "./documented-answer.ts";

type Json = Record<string, unknown>;

export type DocumentedFetch = typeof fetch & {
  /** Every answer seen that the document does not describe, also those whose rejection a caller swallowed. */
  readonly undocumented: readonly string[];
  /** Reads the document and compiles its schemas now rather than at the first answer of each operation. */
  prepare(): Promise<void>;
};

/** The answer as `expectDocumented` takes it, read from a copy so the caller still reads the original. */
async function answerOf(method: string, response: Response): Promise<DocumentedAnswer> {
  const contentType = response.headers.get("content-type") ?? undefined;
  const answer = { status: response.status, contentType, headers: response.headers };
  // An event stream stays open, and HEAD's answer is GET's without the body: only the media type is judged.
  if (method === "HEAD" || contentType?.startsWith("text/event-stream"))
    return { ...answer, body: undefined, unread: true };
  const text = await response.clone().text();
  if (text === "" || !contentType?.startsWith("application/json")) return { ...answer, body: text };
  try {
    return { ...answer, body: JSON.parse(text) };
  } catch {
    throw new Error(`the body is not the JSON its content-type says: ${text.slice(0, 200)}`);
  }
}

/**
 * A `fetch` that holds every answer of the gateway at `gatewayUrl` that its OpenAPI document speaks for
 * (all of `{base_url}` and the key set) to that document, read once from `/v1/openapi.json`, with
 * `expectDocumented`: an answer it does not describe rejects the call, saying what differs, so the test
 * that made it fails there. Other addresses (the web app's and the web flow's pages, the wallet's
 * endpoints, other servers) and calls that get no answer pass through as they are.
 */
export function documentedFetch(gatewayUrl: string, base: typeof fetch = globalThis.fetch): DocumentedFetch {
  const origin = new URL(gatewayUrl).origin;
  let document: Promise<Json> | undefined;
  const documentOf = () => {
    // A read that failed (the test restarted the gateway while it ran) is tried again by the next call.
    document ??= base(`${origin}/v1/openapi.json`)
      .then(async (response) => {
        const read = (await response.json()) as Json;
        prepareDocumented(read);
        return read;
      })
      .catch((error: unknown) => {
        document = undefined;
        throw error;
      });
    return document;
  };
  const undocumented: string[] = [];
  const checked = async (input: string | URL | Request, init?: RequestInit) => {
    const response = await base(input, init);
    const url = new URL(input instanceof Request ? input.url : input);
    if (url.origin !== origin) return response;
    const described = await documentOf();
    const path = `${url.pathname}${url.search}`;
    if (!describes(described, path)) return response;
    const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
    try {
      // HEAD is GET without the body (RFC 9110 9.3.2): the document describes it as its GET.
      expectDocumented(described, method === "HEAD" ? "GET" : method, path, await answerOf(method, response));
    } catch (error) {
      // A body cut off (the caller aborted) is the caller's to see when it reads the original.
      if (error instanceof Error && error.name === "AbortError") return response;
      const problem = `${method} ${url.pathname}: ${(error as Error).message}`;
      undocumented.push(problem);
      throw new Error(`an undocumented answer: ${problem}`);
    }
    return response;
  };
  const prepare = async () => {
    await documentOf();
  };
  return Object.assign(checked, { undocumented, prepare }) as DocumentedFetch;
}
