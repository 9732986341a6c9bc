import { basePath } from "../http/route.ts";

/**
 * Where the person's side of a request lives. The flow secret travels in the URL fragment of the web
 * flow, so browsers never send it to a server in a request line, a log or a Referer; the page reads it
 * and presents it to the app API. An image request has no fragment, so the QR code's address carries
 * the secret in its query: it is exactly as secret as `deep_link`, which the image encodes.
 */
export interface RequestLinks {
  deep_link: string;
  web_url: string;
  qr_code_url: string;
}

/** The mobile app's link scheme. */
const appLinkBase = "svc://verify";

/** Below `{base_url}`: `/qr/<request_id>.svg?t=<flow secret>` is the request's deep link as a QR code. */
export const qrCodePrefix = "/qr/";
export const qrCodeSuffix = ".svg";

export const requestIdForm = /^req_[0-9a-f]{32}$/;
/** The flow secret as gate issues it (base62), with room to grow. */
export const flowSecretForm = /^[0-9A-Za-z]{16,128}$/;

export const deepLink = (requestId: string, flowSecret: string): string =>
  `${appLinkBase}/${requestId}?t=${encodeURIComponent(flowSecret)}`;

export function requestLinks(publicOrigin: string, requestId: string, flowSecret: string): RequestLinks {
  const secret = encodeURIComponent(flowSecret);
  return {
    deep_link: deepLink(requestId, flowSecret),
    web_url: `${publicOrigin}/flow/${requestId}#t=${secret}`,
    qr_code_url: `${publicOrigin}${basePath}${qrCodePrefix}${requestId}${qrCodeSuffix}?t=${secret}`,
  };
}

/** The request and flow secret a QR code's address (path below `{base_url}`, query) names; undefined when it is not of the form issued. */
export function qrCodeTarget(
  path: string,
  query: URLSearchParams,
): { requestId: string; flowSecret: string } | undefined {
  const file = path.startsWith(qrCodePrefix) ? path.slice(qrCodePrefix.length) : "";
  const requestId = file.endsWith(qrCodeSuffix) ? file.slice(0, -qrCodeSuffix.length) : "";
  const [flowSecret, ...others] = query.getAll("t");
  if (
    !requestIdForm.test(requestId) ||
    flowSecret === undefined ||
    others.length > 0 ||
    !flowSecretForm.test(flowSecret)
  )
    return undefined;
  return { requestId, flowSecret };
}
