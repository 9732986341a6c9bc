import type { JWK } from "jose";

/** The parts of node:crypto the signature check uses. */
export interface NodeCrypto {
  createPublicKey(options: { key: JWK; format: "jwk" }): object;
  verify(algorithm: string, data: Uint8Array, key: object, signature: Uint8Array): boolean;
}

/** The part of node:buffer's `Buffer` that reads a token's segments. */
export interface NodeBuffer {
  from(
    text: string,
    encoding: "base64url" | "latin1",
  ): Uint8Array<ArrayBuffer> & { toString(encoding: "utf8"): string };
}

const runtime = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;

/**
 * Node's own modules where the runtime offers them (Node 20.16 and later, Deno, Bun), asked for at run time so
 * that the package imports no Node-only module: on edge runtimes, which have none, these are undefined and the
 * callers use Web Crypto and `atob`. Where they exist they do the same work with less CPU.
 */
export const nodeCrypto = runtime?.getBuiltinModule?.("node:crypto") as NodeCrypto | undefined;
export const nodeBuffer = (runtime?.getBuiltinModule?.("node:buffer") as { Buffer: NodeBuffer } | undefined)?.Buffer;
