import { type DestinationPolicy, refusalForUrl } from "../delivery/destination-guard.ts";
import { refuse } from "../refusal.ts";

const maxUrlLength = 2048;

/**
 * Checked when an endpoint is added, for a clear answer at once. The connection-time guard checks
 * again, since a name can later resolve elsewhere and the deployment may have changed.
 */
export function validateEndpointUrl(raw: string, policy: DestinationPolicy): string {
  if (raw.length > maxUrlLength) throw refuse("invalid_argument", `url is longer than ${maxUrlLength} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse("invalid_argument", `url must be an absolute http or https URL: ${raw}`);
  }
  if (url.username || url.password) throw refuse("invalid_argument", "url must not carry credentials (user:password@)");
  const refusal = refusalForUrl(url, policy);
  if (refusal) throw refuse("invalid_argument", `url refused: ${refusal}`);
  return url.href;
}
