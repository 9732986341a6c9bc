/**
 * The headers of every page the gateway serves to the person (the web app, the development identity
 * provider's page) and of their scripts and stylesheet. The policy allows only files from this origin: no
 * inline script or style, nothing framed (an approval page framed by another site is how an approval is
 * clickjacked), no referrer leaving the page.
 */
export function pageHeaders(contentType: string, options: { connectSrc?: readonly string[] } = {}) {
  const connect = ["'self'", ...(options.connectSrc ?? [])].join(" ");
  return {
    "content-type": contentType,
    "cache-control": "no-store",
    "content-security-policy": `default-src 'none'; script-src 'self'; style-src 'self'; connect-src ${connect}; img-src 'self' data:; manifest-src 'self'; worker-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`,
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
  };
}

const htmlEscapes: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Text made safe for HTML content and quoted attribute values. */
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => htmlEscapes[c] ?? c);
