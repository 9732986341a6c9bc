import {
  createHash,
  createPrivateKey,
  generateKeyPairSync,
  type JsonWebKey,
  type KeyObject,
  randomBytes,
  sign,
  verify,
  X509Certificate,
} from "node:crypto";
import { cborEncode, DataItem, DeviceRequest, DeviceResponse, type MdocContext } from "@animo-id/mdoc";
import { AccountConsoleService } from "@svc/proto/account/v1/account_pb.js";
import { type CliContext, type CommandGroup, type OptionValues, stringValue, UsageError } from "../command.ts";

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
const decodeSegment = (segment: string | undefined): Record<string, unknown> | undefined => {
  try {
    const value = JSON.parse(Buffer.from(segment ?? "", "base64url").toString());
    return typeof value === "object" && value !== null ? value : undefined;
  } catch {
    return undefined;
  }
};

/**
 * The request object's payload when it authenticates its client as OpenID4VP 1.0 §5.9.3's `x509_hash`
 * prefix asks, as a wallet checks before answering: ES256, `client_id` `x509_hash:` the base64url
 * SHA-256 of the `x5c` leaf's DER, and the JWS signature verified with that leaf's public key.
 * Undefined otherwise: the development wallet then answers nothing but `invalid_client`.
 */
function authenticatedRequest(jws: string): RequestObject | undefined {
  const [headerPart, payloadPart, signaturePart = ""] = jws.split(".");
  const header = decodeSegment(headerPart);
  const payload = decodeSegment(payloadPart);
  const leaf = Array.isArray(header?.x5c) && typeof header.x5c[0] === "string" ? header.x5c[0] : undefined;
  if (!header || !payload || header.alg !== "ES256" || leaf === undefined) return undefined;
  const der = Buffer.from(leaf, "base64");
  if (payload.client_id !== `x509_hash:${createHash("sha256").update(der).digest("base64url")}`) return undefined;
  try {
    const key = new X509Certificate(der).publicKey;
    const signed = Buffer.from(`${headerPart}.${payloadPart}`);
    const valid = verify("sha256", signed, { key, dsaEncoding: "ieee-p1363" }, Buffer.from(signaturePart, "base64url"));
    return valid ? (payload as unknown as RequestObject) : undefined;
  } catch {
    return undefined;
  }
}

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
  response_mode: string;
  response_uri: string;
  expected_origins?: unknown;
  dcql_query: {
    credentials: { id: string; format: string; meta?: { doctype_value?: string }; claims: { path: string[] }[] }[];
  };
}

/**
 * How the answer is bound to the verifier (OpenID4VP 1.0): by redirect, to the `client_id` (the
 * KB-JWT's `aud`) and the `response_uri` (the mdoc's OpenID4VPHandover); through the Digital
 * Credentials API, to the page's origin (`aud` `origin:<origin>`, the mdoc's OpenID4VPDCAPIHandover).
 */
type Binding = { kind: "redirect"; clientId: string; responseUri: string } | { kind: "dc_api"; origin: string };

const audienceOf = (binding: Binding) => (binding.kind === "redirect" ? binding.clientId : `origin:${binding.origin}`);

function sessionTranscript(binding: Binding, nonce: string) {
  const [name, info] =
    binding.kind === "redirect"
      ? ["OpenID4VPHandover", [binding.clientId, nonce, null, binding.responseUri]]
      : ["OpenID4VPDCAPIHandover", [binding.origin, nonce, null]];
  return cborEncode(DataItem.fromData([null, null, [name, createHash("sha256").update(cborEncode(info)).digest()]]));
}

/** The document type of each mdoc the development issuer issues, by `--format`. */
const mdocDocTypes: Record<string, string> = { mdoc: "org.iso.18013.5.1.mDL", "mdoc-av": "eu.europa.ec.av.1" };

/** The names the request's DCQL query asks of the credential query in `format` (for an mdoc, of its doctype). */
function askedClaims(request: RequestObject, format: string, docType?: string) {
  const query = request.dcql_query.credentials.find(
    (c) => c.format === format && (docType === undefined || c.meta?.doctype_value === docType),
  );
  if (!query) throw new UsageError(`the request does not ask for ${docType ?? format}`);
  return { id: query.id, paths: query.claims.map((claim) => claim.path) };
}

/** The SD-JWT VC with only the asked disclosures and a KB-JWT over the request's nonce and the binding's audience. */
function sdJwtVcAnswer(credential: string, holderKey: KeyObject, request: RequestObject, binding: Binding) {
  const asked = askedClaims(request, "dc+sd-jwt");
  const names = new Set(asked.paths.map((path) => path[1]));
  const [issuerJwt = "", ...disclosures] = credential.split("~").filter((part) => part !== "");
  const chosen = disclosures.filter((d) => names.has(JSON.parse(Buffer.from(d, "base64url").toString())[1]));
  const presented = `${[issuerJwt, ...chosen].join("~")}~`;
  const bindingInput = `${b64({ typ: "kb+jwt", alg: "ES256" })}.${b64({
    iat: request.iat,
    aud: audienceOf(binding),
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
 * SHA-256(cbor([client_id, nonce, null, response_uri]))]]` by redirect, `[null, null,
 * ["OpenID4VPDCAPIHandover", SHA-256(cbor([origin, nonce, null]))]]` through the DC API.
 */
async function mdocAnswer(
  mdoc: string,
  docType: string,
  deviceKey: KeyObject,
  request: RequestObject,
  binding: Binding,
) {
  const asked = askedClaims(request, "mso_mdoc", docType);
  const [docNamespace = ""] = asked.paths[0] ?? [];
  const transcript = sessionTranscript(binding, request.nonce);
  const signed = await DeviceResponse.from(Buffer.from(mdoc, "base64url"))
    .usingDeviceRequest(
      DeviceRequest.from("1.0", [
        {
          itemsRequestData: {
            docType,
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

/** A credential for --birthdate from --issuer bound to a fresh holder key, presented for `request` under `binding`. */
async function answer(values: OptionValues, ctx: CliContext, request: RequestObject, binding: Binding) {
  const format = stringValue(values, "format") ?? "sd-jwt-vc";
  const holder = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const { credential } = await ctx.serviceConsole(AccountConsoleService).issueDevAgeCredential({
    birthDate: values.birthdate as string,
    holderJwk: JSON.stringify(holder.publicKey.export({ format: "jwk" })),
    issuer: stringValue(values, "issuer") ?? "development",
    format,
  });
  const docType = mdocDocTypes[format];
  return docType !== undefined
    ? mdocAnswer(credential, docType, holder.privateKey, request, binding)
    : sdJwtVcAnswer(credential, holder.privateKey, request, binding);
}

const credentialOptions = {
  birthdate: {
    type: "string",
    required: true,
    valueName: "YYYY-MM-DD",
    description: "the birth date in the credential",
  },
  format: {
    type: "string",
    choices: ["sd-jwt-vc", "mdoc", "mdoc-av"],
    description: "credential format: an SD-JWT VC (the default), an mDL, or an EU age verification mdoc",
  },
  issuer: {
    type: "string",
    choices: ["development", "untrusted"],
    description: "who signs it (default development)",
  },
} as const;

export const walletCommands: CommandGroup = {
  name: "wallet",
  summary: "The development wallet: presents an age credential as a person's wallet would (OpenID4VP).",
  commands: [
    {
      name: "present",
      summary: 'Presents an age credential; prints {"accepted", "reason"?}.',
      details:
        "Gets a credential for --birthdate from the development issuer (or the untrusted one) bound to a fresh holder key, " +
        "fetches the request object at the request_uri, checks its client (x509_hash: the x5c leaf's SHA-256 is the " +
        'client_id and its key verifies the signature; else {"accepted": false, "reason": "invalid_client"}, nothing ' +
        "posted) and discloses only the asked claims: an SD-JWT VC's " +
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
        request: { type: "string", valueName: "REQUEST_ID", description: "the Age Gate request to answer" },
        ...credentialOptions,
      },
      async run(values, ctx) {
        const uri = await requestUri(ctx, stringValue(values, "human"), stringValue(values, "request"));
        const fetched = await fetch(uri);
        if (!fetched.ok) throw new UsageError(`the request object could not be fetched: ${fetched.status}`);
        const request = authenticatedRequest(await fetched.text());
        if (!request) return { accepted: false, reason: "invalid_client" };
        const vpToken = await answer(values, ctx, request, {
          kind: "redirect",
          clientId: request.client_id,
          responseUri: request.response_uri,
        });
        const posted = await fetch(String(request.response_uri), {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ vp_token: JSON.stringify(vpToken), state: String(request.state) }).toString(),
        });
        const reply = (await posted.json()) as { error_description?: string };
        return posted.ok
          ? { accepted: true }
          : { accepted: false, reason: reply.error_description ?? String(posted.status) };
      },
    },
    {
      name: "dc-api",
      summary: "Answers a Digital Credentials API request as a wallet on the same device; prints the answer's data.",
      details:
        "Takes the signed request (protocol openid4vp-v1-signed) a page passed to navigator.credentials.get and the " +
        "origin the browser reports, and answers as the wallet would through the DC API (OpenID4VP 1.0 Appendix A): " +
        'a request whose client is not authenticated (x509_hash, as for present) gets {"error": "invalid_client"}; ' +
        'a request whose response_mode is not dc_api or whose expected_origins lacks the origin gets {"error": ' +
        '"invalid_request"}; otherwise {"vp_token": …} with only the asked claims, bound to the origin (a KB-JWT aud ' +
        "of origin:<origin>, or an mDL DeviceResponse signed over the OpenID4VPDCAPIHandover). Nothing is posted: " +
        "the browser hands the answer to the page. Development only.",
      options: {
        "request-object": {
          type: "string",
          required: true,
          valueName: "JWS",
          description: "the signed request (data.request)",
        },
        origin: { type: "string", required: true, valueName: "ORIGIN", description: "the page's origin" },
        ...credentialOptions,
      },
      async run(values, ctx) {
        const request = authenticatedRequest(values["request-object"] as string);
        if (!request) return { error: "invalid_client" };
        const origin = values.origin as string;
        const expected = Array.isArray(request.expected_origins) ? request.expected_origins : [];
        if (request.response_mode !== "dc_api" || !expected.includes(origin)) return { error: "invalid_request" };
        return { vp_token: await answer(values, ctx, request, { kind: "dc_api", origin }) };
      },
    },
  ],
};
