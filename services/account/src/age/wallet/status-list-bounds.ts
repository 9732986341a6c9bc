import { inflateSync } from "node:zlib";

/** A status list token's body, as fetched: more is refused before it is read to the end. */
export const maxStatusListBytes = 256 * 1024;
/** A status list of 8 million one-bit entries inflates to 1 MiB; a list that would inflate further is refused. */
const maxInflatedBytes = 1024 * 1024;

/**
 * Inflates a status list's `lst` (zlib) within {@link maxInflatedBytes}, or throws. Run before the
 * status list library inflates it, which it does without a limit: 256 KiB of deflate can hold 256 MiB.
 */
export function inflateBounded(lst: Uint8Array): Buffer {
  return inflateSync(lst, { maxOutputLength: maxInflatedBytes });
}

/** The JWT form's list, bounded as {@link inflateBounded}; the token is answered as it came. */
export function boundedJwtStatusList(token: string): string {
  const payload = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8"));
  const lst = payload?.status_list?.lst;
  if (typeof lst !== "string") throw new Error("a status list token without status_list.lst");
  inflateBounded(Buffer.from(lst, "base64url"));
  return token;
}

/** The response's body, or a throw as soon as it passes `max` bytes, whatever its Content-Length says. */
export async function readCapped(response: Response, max: number): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  let length = 0;
  const reader = response.body?.getReader();
  if (!reader) return Buffer.alloc(0);
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks);
    length += value.byteLength;
    if (length > max) {
      await reader.cancel();
      throw new Error(`a status list longer than ${max} bytes`);
    }
    chunks.push(value);
  }
}
