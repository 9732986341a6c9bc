import { type KeyObject, sign, verify, X509Certificate } from "node:crypto";
import { cborDecode, cborEncode } from "@animo-id/mdoc";
import { type BitsPerStatus, StatusList } from "@sd-jwt/jwt-status-list";
import { isBoundedCbor } from "./cbor-guard.ts";
import { inflateBounded } from "./status-list-bounds.ts";

/**
 * The CWT form of the IETF Token Status List (draft-ietf-oauth-status-list), as the second edition of
 * ISO 18013-5 references it from an MSO: `status: {status_list: {idx, uri}}` in the MSO, and at `uri`
 * a COSE_Sign1 (`typ` `application/statuslist+cwt`) whose signer's certificate (x5chain) is issued by
 * the IACA root that issued the mdoc's document signer. The bit packing and its compression are
 * `@sd-jwt/jwt-status-list`'s; the COSE envelope is written here, on `node:crypto`, ES256 only.
 */
const statusListCwtType = "application/statuslist+cwt";

const coseSign1Tag = 0xd2;
const header = { alg: 1, typ: 16, x5chain: 33 } as const;
const claim = { sub: 2, exp: 4, iat: 6, statusList: 65533, ttl: 65534 } as const;
const coseEs256 = -7;

export interface StatusListEntry {
  idx: number;
  uri: string;
}

/** The MSO's `status` as CBOR decodes it (maps), or for the issuer, as it is written. */
export const msoStatus = (entry: StatusListEntry) =>
  new Map([
    [
      "status_list",
      new Map<string, unknown>([
        ["idx", entry.idx],
        ["uri", entry.uri],
      ]),
    ],
  ]);

const sigStructure = (protectedHeader: Uint8Array, payload: Uint8Array) =>
  cborEncode(["Signature1", protectedHeader, new Uint8Array(0), payload]);

/**
 * A status list token (tagged COSE_Sign1, CBOR) over `statuses`, with as few bits an entry as hold the
 * largest (1 for valid and invalid, 2 once one is suspended), signed by `signer`.
 */
export function signStatusListCwt(input: {
  uri: string;
  statuses: number[];
  issuedAt: Date;
  ttlSeconds: number;
  signer: { key: KeyObject; certificate: Uint8Array };
}): Buffer {
  const largest = Math.max(0, ...input.statuses);
  const bits = ([1, 2, 4, 8] as const).find((b) => largest < 2 ** b) ?? 8;
  const lst = Buffer.from(new StatusList(input.statuses, bits).compressStatusList(), "base64url");
  const protectedHeader = cborEncode(
    new Map<number, unknown>([
      [header.alg, coseEs256],
      [header.typ, statusListCwtType],
    ]),
  );
  const payload = cborEncode(
    new Map<number, unknown>([
      [claim.sub, input.uri],
      [claim.iat, Math.floor(input.issuedAt.getTime() / 1000)],
      [claim.ttl, input.ttlSeconds],
      [
        claim.statusList,
        new Map<string, unknown>([
          ["bits", bits],
          ["lst", lst],
        ]),
      ],
    ]),
  );
  const signature = sign("sha256", sigStructure(protectedHeader, payload), {
    key: input.signer.key,
    dsaEncoding: "ieee-p1363",
  });
  const unprotectedHeader = new Map<number, unknown>([[header.x5chain, input.signer.certificate]]);
  return Buffer.concat([
    Buffer.from([coseSign1Tag]),
    cborEncode([protectedHeader, unprotectedHeader, payload, signature]),
  ]);
}

const isMap = (value: unknown): value is Map<unknown, unknown> => value instanceof Map;

/**
 * The MSO's status list entry: undefined when it has no `status`; null when it has one that is not a
 * status list entry of this form (refused as malformed, never skipped).
 */
export function statusListEntryOf(status: unknown): StatusListEntry | undefined | null {
  if (status === undefined) return undefined;
  const entry = isMap(status) ? status.get("status_list") : undefined;
  if (!isMap(entry)) return null;
  const idx = entry.get("idx");
  const uri = entry.get("uri");
  if (typeof idx !== "number" || !Number.isSafeInteger(idx) || idx < 0 || typeof uri !== "string") return null;
  return { idx, uri };
}

/** Why a status list token is not usable; the verifier refuses the presentation as `status_unavailable`. */
export class InvalidStatusList extends Error {}
const invalid = (why: string): never => {
  throw new InvalidStatusList(why);
};

function decode(bytes: Uint8Array): unknown {
  if (!isBoundedCbor(bytes)) return invalid("not bounded CBOR");
  try {
    return cborDecode(bytes);
  } catch {
    return invalid("not CBOR");
  }
}

const validAt = (certificate: X509Certificate, now: Date) =>
  new Date(certificate.validFrom) <= now && now <= new Date(certificate.validTo);

/** The leaf of an x5chain header (one certificate, or an array whose first is the leaf). */
function leafCertificate(x5chain: unknown): X509Certificate {
  const leaf = Array.isArray(x5chain) ? x5chain[0] : x5chain;
  if (!(leaf instanceof Uint8Array)) return invalid("no x5chain");
  try {
    return new X509Certificate(leaf);
  } catch {
    return invalid("x5chain is not a certificate");
  }
}

/**
 * The status of entry `idx` in the status list token at `uri`, after checking the token: a COSE_Sign1
 * (tagged or not) with ES256 and `typ` `application/statuslist+cwt`, signed by a certificate that
 * `root` issued and that is valid on our clock (`signedBy` lets the caller remember that check per
 * token), `sub` the `uri` it was fetched from, `iat` not ahead of our clock and `exp` (if any) not
 * passed, both within `skewSeconds`, and a list of 1, 2, 4 or 8 bits per entry that holds `idx`.
 */
export function statusInCwt(
  token: Uint8Array,
  expected: {
    entry: StatusListEntry;
    root: X509Certificate;
    now: Date;
    skewSeconds: number;
    signedBy: (verify: () => boolean) => boolean;
  },
): number {
  const untagged = token[0] === coseSign1Tag ? token.subarray(1) : token;
  const sign1 = decode(untagged);
  if (!Array.isArray(sign1) || sign1.length !== 4) return invalid("not a COSE_Sign1");
  const [protectedBytes, unprotected, payloadBytes, signature] = sign1 as unknown[];
  if (!(protectedBytes instanceof Uint8Array) || !(payloadBytes instanceof Uint8Array))
    return invalid("not a COSE_Sign1");
  if (!(signature instanceof Uint8Array) || signature.length !== 64) return invalid("not an ES256 signature");
  const protectedHeader = decode(protectedBytes);
  if (!isMap(protectedHeader) || !isMap(unprotected)) return invalid("headers are not maps");
  if (protectedHeader.get(header.alg) !== coseEs256) return invalid("not ES256");
  if (protectedHeader.get(header.typ) !== statusListCwtType) return invalid(`typ is not ${statusListCwtType}`);

  const signer = leafCertificate(protectedHeader.get(header.x5chain) ?? unprotected.get(header.x5chain));
  const signed = expected.signedBy(
    () =>
      !signer.ca &&
      signer.checkIssued(expected.root) &&
      signer.verify(expected.root.publicKey) &&
      validAt(signer, expected.now) &&
      verify(
        "sha256",
        sigStructure(protectedBytes, payloadBytes),
        { key: signer.publicKey, dsaEncoding: "ieee-p1363" },
        signature,
      ),
  );
  if (!signed) return invalid("not signed by a certificate of the mdoc's IACA root");

  const claims = decode(payloadBytes);
  if (!isMap(claims)) return invalid("claims are not a map");
  if (claims.get(claim.sub) !== expected.entry.uri) return invalid("sub is not the uri the mdoc names");
  const nowSeconds = Math.floor(expected.now.getTime() / 1000);
  const iat = claims.get(claim.iat);
  if (typeof iat !== "number" || iat > nowSeconds + expected.skewSeconds) return invalid("iat missing or ahead");
  const exp = claims.get(claim.exp);
  if (exp !== undefined && (typeof exp !== "number" || exp <= nowSeconds - expected.skewSeconds))
    return invalid("expired");

  const list = claims.get(claim.statusList);
  const bits = isMap(list) ? list.get("bits") : undefined;
  const lst = isMap(list) ? list.get("lst") : undefined;
  if (bits !== 1 && bits !== 2 && bits !== 4 && bits !== 8) return invalid("bits is not 1, 2, 4 or 8");
  if (!(lst instanceof Uint8Array)) return invalid("lst is not a byte string");
  try {
    inflateBounded(lst);
    return StatusList.decompressStatusList(Buffer.from(lst).toString("base64url"), bits as BitsPerStatus).getStatus(
      expected.entry.idx,
    );
  } catch {
    return invalid("lst does not inflate to a list holding the entry");
  }
}
