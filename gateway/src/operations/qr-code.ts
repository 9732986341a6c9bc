import { encodeQR } from "@paulmillr/qr";
import { jsonReply, type RawReply, type RawRoute } from "../http/raw-route.ts";
import { basePath } from "../http/route.ts";
import { bindLink, bindPrefix, bindQrTarget, linkCodeForm } from "./bind-links.ts";
import { deepLink, flowSecretForm, qrCodePrefix, qrCodeSuffix, qrCodeTarget, requestIdForm } from "./gate-links.ts";

/**
 * `GET {base_url}/qr/<request_id>.svg?t=<flow secret>` (`qr_code_url`): the request's `deep_link` as a
 * QR code, for a partner page to show in an `<img>` so the person scans it with the app; likewise
 * `GET {base_url}/qr/bind/<link_code>.svg`, an agent's bind link (`bind-links.ts`). The image is
 * drawn from its own address alone and shows nothing the address does not hold, so it needs no lookup;
 * an address not of the form this service issues is a 404.
 */

/** Pixels per module: a size that scans from a screen; the page may scale the image freely. */
const modulePixels = 8;

/** A QR code (error correction M, four modules of quiet zone) as SVG: the dark modules as one path on white. */
export function qrCodeSvg(text: string): string {
  const modules = encodeQR(text, "raw", { ecc: "medium", border: 4 });
  const size = modules.length;
  let path = "";
  modules.forEach((row, y) => {
    for (let x = 0; x < size; x++) {
      if (!row[x]) continue;
      const start = x;
      while (row[x + 1]) x++;
      path += `M${start} ${y}h${x + 1 - start}v1H${start}z`;
    }
  });
  const pixels = size * modulePixels;
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${size} ${size}" width="${pixels}" height="${pixels}" shape-rendering="crispEdges"><rect width="${size}" height="${size}" fill="#fff"/><path d="${path}" fill="#000"/></svg>`;
}

/** The image at a QR code's address (path below `{base_url}`, query); undefined when it is not of the form issued. */
export function qrCodeImage(path: string, query: URLSearchParams): RawReply | undefined {
  const target = qrCodeTarget(path, query);
  const linkCode = bindQrTarget(path);
  const link = target ? deepLink(target.requestId, target.flowSecret) : linkCode && bindLink(linkCode);
  if (!link) return undefined;
  return {
    status: 200,
    body: qrCodeSvg(link),
    headers: {
      "content-type": "image/svg+xml",
      // As secret as the deep link: never kept by a browser or a shared cache.
      "cache-control": "no-store",
      "content-security-policy": "default-src 'none'",
      "x-content-type-options": "nosniff",
      // Partner pages on other origins embed it, also those that require CORP (COEP).
      "cross-origin-resource-policy": "cross-origin",
    },
  };
}

/** Every address below `{base_url}/qr/`: one of the form issued is its image, any other a 404. */
export const qrCodeRoute: RawRoute = {
  path: new RegExp(`^${basePath}${qrCodePrefix}`),
  method: "GET",
  serve({ url }) {
    return (
      qrCodeImage(url.pathname.slice(basePath.length), url.searchParams) ??
      jsonReply(404, { error: "not_found", message: "no such QR code: the address is not one this service issued" })
    );
  },
};

const imageResponses = {
  "200": {
    description: "An SVG image, drawn from the address alone; not rate-limited.",
    headers: { "Cache-Control": { schema: { type: "string", const: "no-store" } } },
    content: { "image/svg+xml": { schema: { type: "string" } } },
  },
  "404": {
    description: "Not an address of the form this service issues.",
    content: {
      "application/json": {
        schema: { type: "object", properties: { error: { const: "not_found" }, message: { type: "string" } } },
      },
    },
  },
};

/** The OpenAPI document's entries of `qr_code_url` and of a bind session's `qr_code_url`: images, outside the envelope. */
export const qrCodePaths = {
  [`${qrCodePrefix}{request_id}${qrCodeSuffix}`]: {
    get: {
      operationId: "qrCode",
      summary: "The request's `deep_link` as a QR code (the image at `qr_code_url`).",
      security: [],
      parameters: [
        {
          name: "request_id",
          in: "path",
          required: true,
          schema: { type: "string", pattern: requestIdForm.source },
          example: "req_0123456789abcdef0123456789abcdef",
        },
        {
          name: "t",
          in: "query",
          required: true,
          description: "The request's flow secret, as in `deep_link`: the address is as secret as the deep link.",
          schema: { type: "string", pattern: flowSecretForm.source },
          example: "Gq3rT8vXk2LmN5pQ7sW9yZb4Cd6Fh1Jn",
        },
      ],
      responses: imageResponses,
    },
  },
  [`${qrCodePrefix}${bindPrefix}{link_code}${qrCodeSuffix}`]: {
    get: {
      operationId: "bindQrCode",
      summary:
        "An agent's bind session as a QR code (the image at bind-session's `qr_code_url`): its `link_url`, for the person to scan with the app.",
      security: [],
      parameters: [
        {
          name: "link_code",
          in: "path",
          required: true,
          schema: { type: "string", pattern: linkCodeForm.source },
          example: "7KQ4MZ2P",
        },
      ],
      responses: imageResponses,
    },
  },
};
