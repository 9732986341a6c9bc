import type { Client } from "@connectrpc/connect";
import type { Logger } from "@svc/platform";
import type { PublicJwk, SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { jsonReply, type RawRoute } from "../http/raw-route.ts";

/** `GET {jwks_url}`: served outside `/v1` and outside the envelope. */
export const jwksPath = "/.well-known/jwks.json";

/** The spec's key-set cache lifetime; signing starts a new key one such lifetime after publishing it. */
const keySetCacheControl = "public, max-age=300";

export type Jwk = Record<string, string>;

const toJwk = (key: PublicJwk): Jwk =>
  Object.fromEntries(
    Object.entries({ kty: key.kty, crv: key.crv, x: key.x, y: key.y, kid: key.kid, alg: key.alg, use: key.use }).filter(
      ([, v]) => v !== "",
    ),
  );

/**
 * The published key set, fetched from signing for every request so that a rotated key is served the
 * moment signing publishes it (its publish lead covers verifiers' 300 s caches, not a cache of ours).
 * The last good copy is kept and served while signing cannot be reached. Requests that arrive together
 * share one fetch.
 */
export class KeySetCache {
  readonly #signing: Pick<Client<typeof SigningService>, "getKeySet">;
  readonly #logger: Logger;
  #kept: Jwk[] | undefined;
  #fetching: Promise<Jwk[] | undefined> | undefined;

  constructor(options: { signing: Pick<Client<typeof SigningService>, "getKeySet">; logger: Logger }) {
    this.#signing = options.signing;
    this.#logger = options.logger;
  }

  /** The keys to publish; undefined when there are none to give (never fetched, signing unreachable). */
  keys(): Promise<Jwk[] | undefined> {
    this.#fetching ??= this.#fetch().finally(() => {
      this.#fetching = undefined;
    });
    return this.#fetching;
  }

  async #fetch(): Promise<Jwk[] | undefined> {
    try {
      const response = await this.#signing.getKeySet({});
      if (response.keys.length === 0) throw new Error("signing published no keys");
      this.#kept = response.keys.map(toJwk);
      return this.#kept;
    } catch (error) {
      this.#logger.warn(this.#kept ? "key set fetch failed; serving the kept copy" : "key set unavailable", { error });
      return this.#kept;
    }
  }
}

/** `GET {jwks_url}`: the published keys, or 503 `jwks_unavailable` when there are none to give. */
export const keySetRoute = (cache: KeySetCache): RawRoute => ({
  path: jwksPath,
  method: "GET",
  async serve() {
    const keys = await cache.keys();
    if (!keys) return jsonReply(503, { keys: [], error: "jwks_unavailable" }, { "cache-control": "no-store" });
    return jsonReply(200, { keys }, { "cache-control": keySetCacheControl });
  },
});

/** The OpenAPI document's entry: the key set lives at the origin, not below `{base_url}`. */
export const keySetPaths = (publicOrigin: string) => ({
  [jwksPath]: {
    servers: [{ url: publicOrigin }],
    get: {
      operationId: "keySet",
      summary: "The public key set of attestation tokens and proofs (select the key by the token's `kid`).",
      security: [],
      responses: {
        "200": {
          description: "Plain JSON outside the envelope; `Cache-Control: public, max-age=300`.",
          content: {
            "application/json": {
              schema: {
                type: "object",
                required: ["keys"],
                properties: { keys: { type: "array", items: { type: "object" } } },
              },
            },
          },
        },
        "503": {
          description: "No key set can be built: keep the cached copy and retry.",
          content: {
            "application/json": {
              schema: {
                type: "object",
                properties: { keys: { type: "array", maxItems: 0 }, error: { const: "jwks_unavailable" } },
              },
            },
          },
        },
      },
    },
  },
});
