import { type KeyObject, sign, verify } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import { derToJose, joseToDer } from "./jose-signature.ts";

/** A key that signs, with its protected header encoded once instead of on every token. */
export interface JwsSigner {
  kid: string;
  privateKey: KeyObject;
  headerSegment: string;
}

export function createSigner(kid: string, privateKey: KeyObject): JwsSigner {
  return { kid, privateKey, headerSegment: encodeSegment({ alg: "ES256", kid, typ: "JWT" }) };
}

const encodeSegment = (value: JsonObject): string => Buffer.from(JSON.stringify(value)).toString("base64url");

/** Compact-serialized ES256 JWS over the claims. */
export function signCompact(signer: JwsSigner, claims: JsonObject): string {
  const signingInput = `${signer.headerSegment}.${encodeSegment(claims)}`;
  const der = sign("sha256", Buffer.from(signingInput, "latin1"), signer.privateKey);
  return `${signingInput}.${derToJose(der).toString("base64url")}`;
}

export interface ParsedJws {
  header: JsonObject;
  payload: JsonObject;
  /** The payload exactly as sent: the signature covers these characters, so they identify the token. */
  payloadSegment: string;
  signingInput: Buffer;
  signature: Buffer;
}

const base64url = /^[A-Za-z0-9_-]+$/;
/** Empty is still the form: an unsecured (`alg: none`) token ends in a dot, and is refused for its algorithm. */
const signatureForm = /^[A-Za-z0-9_-]*$/;

/** Splits and decodes a compact JWS; undefined when it does not have that form. */
export function parseCompact(token: string): ParsedJws | undefined {
  const parts = token.split(".");
  if (parts.length !== 3) return undefined;
  const [headerSegment, payloadSegment, signatureSegment] = parts as [string, string, string];
  if (!base64url.test(headerSegment) || !base64url.test(payloadSegment) || !signatureForm.test(signatureSegment))
    return undefined;
  const header = decodeObject(headerSegment);
  const payload = decodeObject(payloadSegment);
  if (header === undefined || payload === undefined) return undefined;
  return {
    header,
    payload,
    payloadSegment,
    signingInput: Buffer.from(`${headerSegment}.${payloadSegment}`, "latin1"),
    signature: Buffer.from(signatureSegment, "base64url"),
  };
}

function decodeObject(segment: string): JsonObject | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, "base64url").toString("utf8"));
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as JsonObject) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Checks a raw r||s ES256 signature; converting to DER first is faster than Node's own conversion.
 * It runs on the thread pool, so the tokens of one batch are checked on every core at once.
 */
export function verifyEs256(publicKey: KeyObject, signingInput: Buffer, signature: Buffer): Promise<boolean> {
  if (signature.length !== 64) return Promise.resolve(false);
  return new Promise((resolve, reject) => {
    verify("sha256", signingInput, publicKey, joseToDer(signature), (error, valid) =>
      error ? reject(error) : resolve(valid),
    );
  });
}
