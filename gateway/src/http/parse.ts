import type { IncomingMessage } from "node:http";
import { InputValidationError } from "./errors.ts";
import type { Stage } from "./pipeline.ts";

/** Largest JSON body an operation accepts; the biggest legitimate one (an Adaptive Card) is far below. */
export const bodyLimitBytes = 64 * 1024;

/**
 * Reads the input as received: the JSON body of a POST (an object; empty means `{}`), the query
 * parameters of a GET. Unreadable input is a 400 like any other invalid input, never a 500.
 */
export const parseStage: Stage = {
  name: "parse",
  async run(ctx, next) {
    if (ctx.route.method === "GET") {
      ctx.rawInput = queryInput(ctx.url.searchParams);
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
export function queryInput(params: URLSearchParams): Record<string, unknown> {
  const out: Record<string, string | string[]> = {};
  for (const key of new Set(params.keys())) {
    const values = params.getAll(key);
    out[key] = values.length === 1 ? values[0]! : values;
  }
  return out;
}

const bodyError = (message: string) => new InputValidationError({}, [{ propertyPath: "", invalidValue: null, message }]);

export function isJsonMediaType(contentType: string | undefined): boolean {
  const mediaType = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  return mediaType === "application/json" || /^application\/[a-z0-9.+-]+\+json$/.test(mediaType);
}

export async function readJsonObject(request: IncomingMessage, limit: number): Promise<Record<string, unknown>> {
  const declared = Number(request.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) throw bodyError(`request body is larger than ${limit} bytes`);
  const text = await readText(request, limit);
  if (text.trim() === "") return {};
  if (!isJsonMediaType(request.headers["content-type"])) throw bodyError("request body must be JSON, sent with Content-Type: application/json");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw bodyError(`request body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw bodyError("request body must be a JSON object");
  return value as Record<string, unknown>;
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
