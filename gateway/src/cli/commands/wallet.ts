import {
  createHash,
  createPrivateKey,
  generateKeyPairSync,
  type JsonWebKey,
  type KeyObject,
  randomBytes,
  sign,
} from "node:crypto";
import { cborEncode, DataItem, DeviceRequest, DeviceResponse, type MdocContext } from "@animo-id/mdoc";
import { AccountConsoleService } from "@svc/proto/account/v1/account_pb.js";
import { type CliContext, type CommandGroup, stringValue, UsageError } from "../command.ts";

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
const decodeJwtPayload = (jwt: string) => JSON.parse(Buffer.from(jwt.split(".")[1] ?? "", "base64url").toString());

/** The request_uri to answer: a gate request's open presentation step, or a new ahead-of-time one in the app API. */
async function requestUri(ctx: CliContext, human: string | undefined, requestId: string | undefined): Promise<string> {
  if (requestId !== undefined)
    return (await ctx.serviceConsole(AccountConsoleService).findAgePresentation({ requestId })).requestUri;
  if (human === undefined) throw new UsageError("--human is required without --request");
  const identity = await ctx.serviceConsole(AccountConsoleService).getDevSignInIdentity({ svcUserId: human });
  const session = await ctx.console().mintDevSession({ issuer: identity.issuer, subject: identity.subject });
  const api = process.env.SVCCTL_API_URL ?? "http://127.0.0.1:8080";
  const response = await fetch(`${api}/v1/app/age/prove`, {
    method: "POST",
    headers: { authorization: `Bearer ${session.sessionToken}`, "content-type": "application/json" },
    body: "{}",
  });
  const answer = (await response.json()) as { data?: { data?: { request_uri?: string }; error?: { message: string } } };
  const uri = answer.data?.data?.request_uri;
  if (!uri) throw new UsageError(`the app API refused: ${answer.data?.error?.message ?? response.status}`);
  return uri;
}

interface RequestObject {
  client_id: string;
  nonce: string;
  iat: number;
  state: string;
  response_uri: string;
  dcql_query: { credentials: { id: string; format: string; claims: { path: string[] }[] }[] };
}

/** The names the request's DCQL query asks of the credential query in `format`. */
function askedClaims(request: RequestObject, format: string) {
  const query = request.dcql_query.credentials.find((c) => c.format === format);
  if (!query) throw new UsageError(`the request does not ask for ${format}`);
  return { id: query.id, paths: query.claims.map((claim) => claim.path) };
}

/** The SD-JWT VC with only the asked disclosures and a KB-JWT over the request's nonce and client_id. */
function sdJwtVcAnswer(credential: string, holderKey: KeyObject, request: RequestObject) {
  const asked = askedClaims(request, "dc+sd-jwt");
  const names = new Set(asked.paths.map((path) => path[1]));
  const [issuerJwt = "", ...disclosures] = credential.split("~").filter((part) => part !== "");
  const chosen = disclosures.filter((d) => names.has(JSON.parse(Buffer.from(d, "base64url").toString())[1]));
  const presented = `${[issuerJwt, ...chosen].join("~")}~`;
  const bindingInput = `${b64({ typ: "kb+jwt", alg: "ES256" })}.${b64({
    iat: request.iat,
    aud: request.client_id,
    nonce: request.nonce,
    sd_hash: createHash("sha256").update(presented).digest("base64url"),
  })}`;
  const signature = sign("sha256", Buffer.from(bindingInput), { key: holderKey, dsaEncoding: "ieee-p1363" });
  return { [asked.id]: [`${presented}${bindingInput}.${signature.toString("base64url")}`] };
}

/** The device's side of COSE for `@animo-id/mdoc`: SHA-256 and ES256 signatures. */
const deviceContext: Pick<MdocContext, "crypto" | "cose"> = {
  crypto: {
    random: (length) => randomBytes(length),
    digest: ({ bytes }) => createHash("sha256").update(bytes).digest(),
    calculateEphemeralMacKeyJwk: () => {
      throw new Error("the development wallet authenticates by signature");
    },
  },
  cose: {
    sign1: {
      sign: ({ sign1, jwk }) =>
        sign("sha256", sign1.getRawSigningData().data, {
          key: createPrivateKey({ key: jwk as JsonWebKey, format: "jwk" }),
          dsaEncoding: "ieee-p1363",
        }),
      verify: () => false,
    },
    mac0: {
      sign: () => {
        throw new Error("the development wallet authenticates by signature");
      },
      verify: () => false,
    },
  },
};

/**
 * The DeviceResponse (ISO 18013-5) disclosing only the asked elements, signed by the device key over
 * the session transcript of OpenID4VP 1.0 Annex B.2.6.1: `[null, null, ["OpenID4VPHandover",
 * SHA-256(cbor([client_id, nonce, null, response_uri]))]]`.
 */
async function mdocAnswer(mdoc: string, deviceKey: KeyObject, request: RequestObject) {
  const asked = askedClaims(request, "mso_mdoc");
  const [docNamespace = ""] = asked.paths[0] ?? [];
  const handoverInfo = cborEncode([request.client_id, request.nonce, null, request.response_uri]);
  const transcript = cborEncode(
    DataItem.fromData([null, null, ["OpenID4VPHandover", createHash("sha256").update(handoverInfo).digest()]]),
  );
  const signed = await DeviceResponse.from(Buffer.from(mdoc, "base64url"))
    .usingDeviceRequest(
      DeviceRequest.from("1.0", [
        {
          itemsRequestData: {
            docType: "org.iso.18013.5.1.mDL",
            nameSpaces: new Map([[docNamespace, new Map(asked.paths.map((path) => [String(path[1]), false]))]]),
          },
        },
      ]),
    )
    .usingSessionTranscriptBytes(transcript)
    .authenticateWithSignature(deviceKey.export({ format: "jwk" }) as never, "ES256")
    .sign(deviceContext);
  return { [asked.id]: [Buffer.from(signed.encode()).toString("base64url")] };
}

export const walletCommands: CommandGroup = {
  name: "wallet",
  summary: "The development wallet: presents an age credential as a person's wallet would (OpenID4VP).",
  commands: [
    {
      name: "present",
      summary: 'Presents an age credential; prints {"accepted", "reason"?}.',
      details:
        "Gets a credential for --birthdate from the development issuer (or the untrusted one) bound to a fresh holder key, " +
        "fetches the request object at the request_uri and discloses only the asked claims: an SD-JWT VC's " +
        "age_equal_or_over with a KB-JWT over its nonce and client_id, or an mDL's age_over_NN in a DeviceResponse " +
        "signed over the OpenID4VP session transcript (nonce, client_id, response_uri); then posts it by direct_post. With --request it answers that request's presentation " +
        "step (open the request first); without, it proves the age ahead of time through the app API at SVCCTL_API_URL " +
        "(default http://127.0.0.1:8080). Development only.",
      options: {
        human: {
          type: "string",
          valueName: "SVC_USER_ID",
          description: "the person (required without --request: the request names its own step)",
        },
        birthdate: {
          type: "string",
          required: true,
          valueName: "YYYY-MM-DD",
          description: "the birth date in the credential",
        },
        request: { type: "string", valueName: "REQUEST_ID", description: "the Age Gate request to answer" },
        format: {
          type: "string",
          choices: ["sd-jwt-vc", "mdoc"],
          description: "credential format (default sd-jwt-vc)",
        },
        issuer: {
          type: "string",
          choices: ["development", "untrusted"],
          description: "who signs it (default development)",
        },
      },
      async run(values, ctx) {
        const format = stringValue(values, "format") ?? "sd-jwt-vc";
        const holder = generateKeyPairSync("ec", { namedCurve: "P-256" });
        const { credential } = await ctx.serviceConsole(AccountConsoleService).issueDevAgeCredential({
          birthDate: values.birthdate as string,
          holderJwk: JSON.stringify(holder.publicKey.export({ format: "jwk" })),
          issuer: stringValue(values, "issuer") ?? "development",
          format,
        });
        const uri = await requestUri(ctx, stringValue(values, "human"), stringValue(values, "request"));
        const fetched = await fetch(uri);
        if (!fetched.ok) throw new UsageError(`the request object could not be fetched: ${fetched.status}`);
        const request = decodeJwtPayload(await fetched.text()) as RequestObject;
        const vpToken =
          format === "mdoc"
            ? await mdocAnswer(credential, holder.privateKey, request)
            : sdJwtVcAnswer(credential, holder.privateKey, request);
        const posted = await fetch(String(request.response_uri), {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ vp_token: JSON.stringify(vpToken), state: String(request.state) }).toString(),
        });
        const answer = (await posted.json()) as { error_description?: string };
        return posted.ok
          ? { accepted: true }
          : { accepted: false, reason: answer.error_description ?? String(posted.status) };
      },
    },
  ],
};
