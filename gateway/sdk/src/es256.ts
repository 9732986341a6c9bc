import { importJWK, type JWK } from "jose";
import { type NodeCrypto, nodeCrypto } from "./node-builtins.ts";

/** Checks an ES256 signature (JOSE's 64-byte r‖s) over a token's signing input, under one public key. */
export type SignatureCheck = (
  signingInput: Uint8Array<ArrayBuffer>,
  signature: Uint8Array<ArrayBuffer>,
) => boolean | Promise<boolean>;

/**
 * The check for one published key: node:crypto's `verify` where there is one, Web Crypto otherwise. Node's Web
 * Crypto hands every check to its thread pool behind a promise; the hand-over, the wake-up and the argument
 * checks around it cost more CPU than the signature itself, so the synchronous check is preferred.
 */
export function signatureCheck(jwk: JWK): Promise<SignatureCheck> {
  return nodeCrypto === undefined ? webCryptoCheck(jwk) : Promise.resolve(nodeCryptoCheck(jwk, nodeCrypto));
}

/** With node:crypto, on DER, which OpenSSL checks directly; converting r‖s with `dsaEncoding` costs half a check. */
function nodeCryptoCheck(jwk: JWK, node: NodeCrypto): SignatureCheck {
  const key = node.createPublicKey({ key: publicPart(jwk), format: "jwk" });
  return (signingInput, signature) =>
    signature.length === 64 && node.verify("sha256", signingInput, key, derSignature(signature));
}

/** With Web Crypto, through jose's key import: the check of runtimes without node:crypto. */
async function webCryptoCheck(jwk: JWK): Promise<SignatureCheck> {
  const key = (await importJWK({ ...publicPart(jwk), alg: "ES256" }, "ES256")) as CryptoKey;
  const algorithm = { name: "ECDSA", hash: "SHA-256" };
  return (signingInput, signature) =>
    signature.length === 64 && crypto.subtle.verify(algorithm, key, signature, signingInput);
}

const publicPart = ({ kty, crv, x, y }: JWK): JWK => ({ kty, crv, x, y });

/** The DER SEQUENCE of two INTEGERs of a 64-byte r‖s signature, written into one array. */
export function derSignature(signature: Uint8Array): Uint8Array {
  const r = integerSpan(signature, 0);
  const s = integerSpan(signature, 32);
  const der = new Uint8Array(6 + r.length + s.length);
  der[0] = 0x30;
  der[1] = 4 + r.length + s.length;
  const afterR = writeInteger(der, 2, signature, r);
  writeInteger(der, afterR, signature, s);
  return der;
}

/**
 * Where a DER INTEGER's value starts in a 32-byte half and its length once encoded: leading zero bytes dropped,
 * one put back when the top bit is set, so it does not read as negative.
 */
function integerSpan(signature: Uint8Array, offset: number) {
  let start = offset;
  while (start < offset + 31 && signature[start] === 0) start++;
  const pad = (signature[start] as number) >= 0x80 ? 1 : 0;
  return { start, end: offset + 32, pad, length: pad + offset + 32 - start };
}

function writeInteger(der: Uint8Array, at: number, signature: Uint8Array, span: ReturnType<typeof integerSpan>) {
  der[at] = 0x02;
  der[at + 1] = span.length;
  der.set(signature.subarray(span.start, span.end), at + 2 + span.pad);
  return at + 2 + span.length;
}
