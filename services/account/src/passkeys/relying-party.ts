import { requireText } from "../input.ts";
import { invalidArgument } from "../refusal.ts";

export interface RelyingParty {
  rpId: string;
  origin: string;
}

const hostname = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$/;

/**
 * The relying party of a ceremony as the caller names it. A web origin must be a bare origin whose
 * host is the rp_id or below it, as browsers require; other origins (an Android app's
 * `android:apk-key-hash:…`) are taken as given.
 */
export function relyingParty(rpId: string, origin: string): RelyingParty {
  const id = requireText(rpId, "rp_id", 253);
  if (!hostname.test(id))
    throw invalidArgument(`rp_id must be a lower-case host name without scheme or port: ${JSON.stringify(rpId)}`);
  requireText(origin, "origin");
  if (/^https?:/i.test(origin)) {
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      throw invalidArgument(`origin is not a URL: ${JSON.stringify(origin)}`);
    }
    if (url.origin !== origin)
      throw invalidArgument(`origin must be a bare origin like ${url.origin}: ${JSON.stringify(origin)}`);
    if (url.hostname !== id && !url.hostname.endsWith(`.${id}`))
      throw invalidArgument(`origin ${origin} is not within rp_id ${id}`);
  }
  return { rpId: id, origin };
}
