import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { GetKeySetResponseSchema, PublicJwkSchema } from "@svc/proto/signing/v1/signing_pb.js";
import { describe, expect, test } from "vitest";
import { jwksPath, KeySetCache, keySetRoute } from "../src/operations/jwks.ts";
import { memoryLogger } from "./memory-logger.ts";

const jwk = (kid: string) =>
  create(PublicJwkSchema, { kid, kty: "EC", crv: "P-256", x: "xx", y: "yy", alg: "ES256", use: "sig" });

/** A signing stand-in whose answers the test sets: a list of kids, or down. */
function fakeSigning() {
  const state = { kids: ["k1"] as string[] | "down", calls: 0 };
  return {
    state,
    getKeySet: async () => {
      state.calls++;
      if (state.kids === "down") throw new ConnectError("connect ECONNREFUSED", Code.Unavailable);
      return create(GetKeySetResponseSchema, { keys: state.kids.map(jwk) });
    },
  };
}

/** What `GET {jwks_url}` answers, its body parsed. */
async function keySetReply(cache: KeySetCache) {
  const reply = await keySetRoute(cache).serve({
    url: new URL(`https://api.svc.test${jwksPath}`),
    headers: {},
    body: "",
  });
  return { ...reply, body: JSON.parse(reply.body.toString()) };
}

describe("key set cache", () => {
  test("serves a key the moment signing publishes it", async () => {
    const signing = fakeSigning();
    const cache = new KeySetCache({ signing, logger: memoryLogger() });
    expect((await cache.keys())?.map((k) => k.kid)).toEqual(["k1"]);
    signing.state.kids = ["k1", "k2"];
    expect((await cache.keys())?.map((k) => k.kid)).toEqual(["k1", "k2"]);
  });

  test("serves the kept copy while signing is down, and tries again on the next request", async () => {
    const signing = fakeSigning();
    const logger = memoryLogger();
    const cache = new KeySetCache({ signing, logger });
    await cache.keys();
    signing.state.kids = "down";
    const reply = await keySetReply(cache);
    expect(reply).toEqual({
      status: 200,
      headers: { "cache-control": "public, max-age=300", "content-type": "application/json; charset=utf-8" },
      body: { keys: [{ kid: "k1", kty: "EC", crv: "P-256", x: "xx", y: "yy", alg: "ES256", use: "sig" }] },
    });
    expect(logger.entries.map((e) => [e.level, e.msg])).toEqual([
      ["warn", "key set fetch failed; serving the kept copy"],
    ]);
    signing.state.kids = ["k3"];
    expect((await cache.keys())?.map((k) => k.kid)).toEqual(["k3"]);
  });

  test("without a copy, an unreachable signing service or an empty set is 503 jwks_unavailable", async () => {
    const signing = fakeSigning();
    signing.state.kids = "down";
    const cache = new KeySetCache({ signing, logger: memoryLogger() });
    expect(await keySetReply(cache)).toEqual({
      status: 503,
      headers: { "cache-control": "no-store", "content-type": "application/json; charset=utf-8" },
      body: { keys: [], error: "jwks_unavailable" },
    });
    signing.state.kids = [];
    expect((await keySetReply(cache)).status).toBe(503);
  });

  test("requests that arrive together share one fetch", async () => {
    const signing = fakeSigning();
    const cache = new KeySetCache({ signing, logger: memoryLogger() });
    await Promise.all([cache.keys(), cache.keys(), cache.keys()]);
    expect(signing.state.calls).toBe(1);
  });
});
