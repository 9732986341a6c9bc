import { type Client, Code, ConnectError } from "@connectrpc/connect";
import type { AccountService } from "@svc/proto/account/v1/account_pb.js";
import { jsonReply, type RawReply, type RawRoute } from "../http/raw-route.ts";
import { qrCodeSvg } from "../operations/qr-code.ts";

const presentationPath = (kind: string, tail = "") => new RegExp(`^/wallet/${kind}/(apr_[0-9a-f]{32})${tail}$`);
const presentationId = (url: URL) => url.pathname.split("/")[3] ?? "";
/** A presentation with its disclosures and KB-JWT is larger than a form post. */
const presentationBodyLimit = 64 * 1024;
const noStore = { "cache-control": "no-store" };
const refusal = (status: number, error: string, description: string): RawReply =>
  jsonReply(status, { error, error_description: description }, noStore);

/**
 * The wallet's side of OpenID4VP (the account service decides; this only carries): the signed request
 * object at the `request_uri`, its QR code for a wallet on another device, and the `direct_post`
 * endpoint. No credential: the wallet has none, and the body is untrusted input. A refusal is a 400
 * with the reason as `error_description`; a service failure is a 503, never a 500.
 */
export function walletRoutes(account: Client<typeof AccountService>, publicOrigin: string): RawRoute[] {
  return [
    {
      path: presentationPath("requests"),
      method: "GET",
      serve: async ({ url }) => {
        try {
          const { requestObject } = await account.getAgePresentationRequestObject({
            presentationId: presentationId(url),
          });
          return {
            status: 200,
            headers: { "content-type": "application/oauth-authz-req+jwt", ...noStore },
            body: requestObject,
          };
        } catch (error) {
          return serviceRefusal(error);
        }
      },
    },
    {
      path: presentationPath("requests", "/qr\\.svg"),
      method: "GET",
      // The link repeats the request object's client_id (x509_hash), which only the account service knows.
      serve: async ({ url }) => {
        try {
          const { clientId } = await account.getAgePresentationRequestObject({ presentationId: presentationId(url) });
          const requestUri = `${publicOrigin}/wallet/requests/${presentationId(url)}`;
          const link = `openid4vp://?${new URLSearchParams({ client_id: clientId, request_uri: requestUri })}`;
          return { status: 200, headers: { "content-type": "image/svg+xml", ...noStore }, body: qrCodeSvg(link) };
        } catch (error) {
          return serviceRefusal(error);
        }
      },
    },
    {
      path: presentationPath("responses"),
      method: "POST",
      bodyLimit: presentationBodyLimit,
      serve: async ({ url, headers, body }) => {
        if (!(headers["content-type"] ?? "").startsWith("application/x-www-form-urlencoded"))
          return refusal(400, "invalid_request", "the response is posted as application/x-www-form-urlencoded");
        const form = new URLSearchParams(body);
        const vpToken = form.getAll("vp_token");
        const state = form.getAll("state");
        if (vpToken.length !== 1 || state.length !== 1)
          return refusal(400, "invalid_request", "vp_token and state are each sent once");
        try {
          const outcome = await account.submitAgePresentation({
            presentationId: presentationId(url),
            vpToken: vpToken[0] ?? "",
            state: state[0] ?? "",
          });
          return outcome.accepted ? jsonReply(200, {}, noStore) : refusal(400, "invalid_request", outcome.reason);
        } catch (error) {
          return serviceRefusal(error);
        }
      },
    },
  ];
}

function serviceRefusal(error: unknown): RawReply {
  const code = error instanceof ConnectError ? error.code : Code.Unknown;
  if (code === Code.NotFound) return refusal(404, "invalid_request", "no such pending presentation request");
  if (code === Code.InvalidArgument) return refusal(400, "invalid_request", (error as ConnectError).rawMessage);
  return refusal(503, "temporarily_unavailable", "try again");
}
