import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, type JWK, SignJWT } from "jose";

/** An ES256 key pair made with Web Crypto, its public half as the key set publishes it. */
export async function es256Key(kid: string) {
  const pair = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
    "sign",
    "verify",
  ])) as CryptoKeyPair;
  const jwk: JWK = { ...(await exportJWK(pair.publicKey)), kid, alg: "ES256", use: "sig" };
  const sign = (claims: Record<string, unknown>, header: Record<string, unknown> = {}) =>
    new SignJWT(claims).setProtectedHeader({ alg: "ES256", kid, typ: "JWT", ...header }).sign(pair.privateKey);
  return { kid, jwk, sign, publicKey: pair.publicKey };
}

/**
 * A real HTTP server publishing a key set the test changes as it goes: `keys`, or HTTP 503 `jwks_unavailable`
 * while `unavailable` is set. It counts the fetches, and resets the connection of the next `resets` of them
 * without an answer, as a server does to a keep-alive connection it has closed.
 */
export async function keySetServer(initial: JWK[]) {
  const state = { keys: initial, unavailable: false, fetches: 0, resets: 0 };
  const server: Server = createServer((request, response) => {
    state.fetches++;
    if (state.resets > 0) {
      state.resets--;
      request.socket.resetAndDestroy();
      return;
    }
    response.setHeader("content-type", "application/json");
    if (state.unavailable) {
      response.statusCode = 503;
      response.end(JSON.stringify({ keys: [], error: "jwks_unavailable" }));
    } else response.end(JSON.stringify({ keys: state.keys }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
  return { state, url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
