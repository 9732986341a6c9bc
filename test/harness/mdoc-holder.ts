import { createHash, createPrivateKey, type JsonWebKey, type KeyObject, randomBytes, sign } from "node:crypto";
import { cborDecode, cborEncode, DataItem, DeviceRequest, DeviceResponse, type MdocContext } from "@animo-id/mdoc";
import type { JWK } from "jose";

/**
 * An mdoc wallet's device side for hostile presentations: the tests get an honest mDL bound to a
 * device key (`IssueDevAgeCredential` with format `mdoc`), then build its DeviceResponse with one
 * thing altered. The session transcript is written here from OpenID4VP 1.0 Annex B.2.6.1, apart from
 * the verifier's, so a verifier that computed it otherwise would fail these tests.
 */
const mdlNamespace = "org.iso.18013.5.1";
/** The mdoc types asked for: the mDL, and the EU age verification attestation (its own namespace). */
const mdl = { docType: "org.iso.18013.5.1.mDL", namespace: mdlNamespace };
export const euAgeVerification = { docType: "eu.europa.ec.av.1", namespace: "eu.europa.ec.av.1" };

/** How the request reached the wallet: by redirect (`direct_post`) or through the Digital Credentials API. */
export type Transcript = { clientId: string; nonce: string; responseUri: string } | { origin: string; nonce: string };

/** Annex B.2.6.1's OpenID4VPHandover, or, for the DC API, OpenID4VPDCAPIHandover over the bare origin. */
function openId4VpSessionTranscript(input: Transcript) {
  const [name, info] =
    "origin" in input
      ? ["OpenID4VPDCAPIHandover", cborEncode([input.origin, input.nonce, null])]
      : ["OpenID4VPHandover", cborEncode([input.clientId, input.nonce, null, input.responseUri])];
  return cborEncode(DataItem.fromData([null, null, [name, createHash("sha256").update(info).digest()]]));
}

const deviceContext: Pick<MdocContext, "crypto" | "cose"> = {
  crypto: {
    random: (length) => randomBytes(length),
    digest: ({ bytes }) => createHash("sha256").update(bytes).digest(),
    calculateEphemeralMacKeyJwk: () => {
      throw new Error("not used: the device signs");
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
        throw new Error("not used: the device signs");
      },
      verify: () => false,
    },
  },
};

/**
 * The issued MDoc with one issuer-signed element's value changed, its digest (in the MSO, under the
 * issuer's signature) kept: what a holder who rewrote `age_over_65` would send.
 */
export function withElementValue(mdoc: string, element: string, value: unknown): string {
  const decoded = cborDecode(Buffer.from(mdoc, "base64url")) as Map<string, unknown>;
  const [document] = decoded.get("documents") as Map<string, Map<string, unknown>>[];
  const nameSpaces = document?.get("issuerSigned")?.get("nameSpaces") as Map<string, DataItem<Map<string, unknown>>[]>;
  const items = nameSpaces.get(mdlNamespace) ?? [];
  nameSpaces.set(
    mdlNamespace,
    items.map((item) => {
      if (item.data.get("elementIdentifier") !== element) return item;
      return DataItem.fromData(new Map([...item.data, ["elementValue", value]]));
    }),
  );
  return Buffer.from(cborEncode(decoded)).toString("base64url");
}

/**
 * A DeviceResponse (base64url) disclosing `elements` of the mDL namespace, signed by `key` over the
 * session transcript of `transcript`.
 */
export async function deviceResponse(input: {
  mdoc: string;
  elements: string[];
  key: KeyObject;
  transcript: Transcript;
  /** The document type the mdoc was issued as (default the mDL). */
  type?: { docType: string; namespace: string };
}): Promise<string> {
  const type = input.type ?? mdl;
  const request = DeviceRequest.from("1.0", [
    {
      itemsRequestData: {
        docType: type.docType,
        nameSpaces: new Map([[type.namespace, new Map(input.elements.map((e) => [e, false]))]]),
      },
    },
  ]);
  const signed = await DeviceResponse.from(Buffer.from(input.mdoc, "base64url"))
    .usingDeviceRequest(request)
    .usingSessionTranscriptBytes(openId4VpSessionTranscript(input.transcript))
    .authenticateWithSignature(input.key.export({ format: "jwk" }) as JWK, "ES256")
    .sign(deviceContext);
  return Buffer.from(signed.encode()).toString("base64url");
}

/** The `vp_token` of OpenID4VP 1.0 answering the DCQL credential id `age_mdoc` (the mDL's), or `id`. */
export const mdocVpToken = (response: string, id = "age_mdoc") => JSON.stringify({ [id]: [response] });
