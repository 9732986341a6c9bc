/**
 * Where the person's side of a request lives. The flow secret travels in the URL fragment of the web
 * flow, so browsers never send it to a server in a request line, a log or a Referer; the page reads it
 * and presents it to the app API.
 */
export interface RequestLinks {
  deep_link: string;
  web_url: string;
  qr_code_url: string;
}

/** The mobile app's link scheme. */
export const appLinkBase = "svc://verify";

export function requestLinks(publicOrigin: string, requestId: string, flowSecret: string): RequestLinks {
  const fragment = `#t=${encodeURIComponent(flowSecret)}`;
  return {
    deep_link: `${appLinkBase}/${requestId}?t=${encodeURIComponent(flowSecret)}`,
    web_url: `${publicOrigin}/flow/${requestId}${fragment}`,
    qr_code_url: `${publicOrigin}/flow/${requestId}/qr${fragment}`,
  };
}
