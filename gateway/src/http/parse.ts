import type { IncomingMessage } from "node:http";
import { InputValidationError } from "./errors.ts";
import type { Stage } from "./pipeline.ts";
import { pathParameters } from "./route.ts";

/** Largest JSON body an operation accepts; the biggest legitimate one (an Adaptive Card) is far below. */
export const bodyLimitBytes = 64 * 1024;

/**
 * Reads the input as received: the JSON body of a POST (an object; empty means `{}`), the query
 * parameters of a GET, the path parameters of a DELETE. Unreadable input is a 400 like any other invalid input, never a 500.
 */
export const parseStage: Stage = {
  name: "parse",
  async run(ctx, next) {
    const repeated = repeatedHeader(ctx.request.headersDistinct);
    if (repeated !== undefined) {
      if (!ctx.request.complete) ctx.responseHeaders.connection = "close";
      throw bodyError(`the ${repeated} header must be sent once`);
    }
    if (ctx.route.method === "GET") {
      if (!isReadableQuery(ctx.request.url ?? ""))
        throw bodyError("the query string is not valid percent-encoded UTF-8");
      ctx.rawInput = queryInput(ctx.url.searchParams);
    } else if (ctx.route.method === "DELETE") {
      const parameters = pathParameters(ctx.route.path, ctx.url.pathname);
      if (parameters === undefined) throw bodyError("the path is not valid percent-encoded UTF-8");
      ctx.rawInput = parameters;
    } else {
      try {
        ctx.rawInput = await readJsonObject(ctx.request, bodyLimitBytes);
      } catch (error) {
        // The rest of an oversized or unread body is not worth reading: answer, then close.
        if (!ctx.request.complete) ctx.responseHeaders.connection = "close";
        throw error;
      }
    }
    return next();
  },
};

/** A parameter given once is a string; given several times, an array (the schema decides if that is allowed). */
function queryInput(params: URLSearchParams): Record<string, unknown> {
  // fromEntries defines own properties, so a parameter named __proto__ is a parameter like any other.
  return Object.fromEntries(
    [...new Set(params.keys())].map((key) => {
      const values = params.getAll(key);
      const [first] = values;
      return [key, values.length === 1 && first !== undefined ? first : values];
    }),
  );
}

/**
 * URLSearchParams reads a broken escape as text and invalid UTF-8 as U+FFFD, so a garbled parameter
 * would pass for another value: the raw query must be printable ASCII whose escapes decode as UTF-8.
 */
function isReadableQuery(target: string): boolean {
  const start = target.indexOf("?");
  if (start === -1) return true;
  const [query = ""] = target.slice(start + 1).split("#");
  if (!/^[\x21-\x7e]*$/.test(query)) return false;
  try {
    for (const part of query.split(/[&=]/)) decodeURIComponent(part.replaceAll("+", " "));
    return true;
  } catch {
    return false;
  }
}

/**
 * Headers that decide how a request is read or who sends it. Node keeps the first of two
 * Authorization or Content-Type headers and silently drops the other; a request that sends two is
 * ambiguous, and is refused rather than guessed at.
 */
const singleHeaders = ["authorization", "content-type", "content-length", "origin", "x-svc-include-ratelimit"] as const;

function repeatedHeader(headers: NodeJS.Dict<string[]>): string | undefined {
  return singleHeaders.find((name) => (headers[name]?.length ?? 0) > 1);
}

const bodyError = (message: string) =>
  new InputValidationError({}, [{ propertyPath: "", invalidValue: null, message }]);

function isJsonMediaType(contentType: string | undefined): boolean {
  const [parameterless = ""] = (contentType ?? "").split(";");
  const mediaType = parameterless.trim().toLowerCase();
  return mediaType === "application/json" || /^application\/[a-z0-9.+-]+\+json$/.test(mediaType);
}

async function readJsonObject(request: IncomingMessage, limit: number): Promise<Record<string, unknown>> {
  const declared = Number(request.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) throw bodyError(`request body is larger than ${limit} bytes`);
  const text = await readText(request, limit);
  if (text.trim() === "") return {};
  if (!isJsonMediaType(request.headers["content-type"]))
    throw bodyError("request body must be JSON, sent with Content-Type: application/json");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw bodyError(`request body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw bodyError("request body must be a JSON object");
  if (nestedDeeperThan(value, maxNesting)) throw bodyError(`request body is nested deeper than ${maxNesting} levels`);
  return value as Record<string, unknown>;
}

/**
 * Far deeper than any operation's input (an Adaptive Card nests a few levels), and shallow enough that
 * echoing the input in a 400 or copying it can never exhaust the stack.
 */
const maxNesting = 32;

function nestedDeeperThan(value: unknown, levels: number): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (levels === 0) return true;
  return Object.values(value).some((item) => nestedDeeperThan(item, levels - 1));
}

function readText(request: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        request.pause();
        reject(bodyError(`request body is larger than ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      const buffer = Buffer.concat(chunks);
      try {
        resolve(new TextDecoder("utf-8", { fatal: true }).decode(buffer));
      } catch {
        reject(bodyError("request body is not valid UTF-8"));
      }
    };
    const onError = () => {
      cleanup();
      reject(bodyError("request body could not be read"));
    };
    const cleanup = () => {
      request.off("data", onData);
      request.off("end", onEnd);
      request.off("error", onError);
    };
    request.on("data", onData);
    request.on("end", onEnd);
    request.on("error", onError);
  });
}
