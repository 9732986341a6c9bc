import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { ManualClock } from "@svc/platform";
import {
  type ResolveSignedInHumanRequestSchema,
  ResolveSignedInHumanResponseSchema,
} from "@svc/proto/account/v1/account_pb.js";
import { exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { loadOidcConfig, userSessionResolver } from "../src/credentials/user-session.ts";

const issuer = "https://id.example.test";
const audience = "svc-app";
const clock = new ManualClock("2026-11-29T10:00:00Z");
const request = { origin: undefined };

/** account's answers: one human per subject, a new one once the old was deleted; every question counted. */
function fakeAccount() {
  const humans = new Map<string, string>();
  let made = 0;
  const asked: string[] = [];
  let held: { asked: () => void; answer: Promise<void> } | undefined;
  return {
    asked,
    humans,
    /** Holds the next answers until `release` is called; `asked` settles once a question arrived. */
    holdAnswers() {
      const { promise: asked, resolve: onAsked } = Promise.withResolvers<void>();
      const { promise: answer, resolve: release } = Promise.withResolvers<void>();
      held = { asked: onAsked, answer };
      return {
        asked,
        release: () => {
          held = undefined;
          release();
        },
      };
    },
    resolveSignedInHuman: async (init: MessageInitShape<typeof ResolveSignedInHumanRequestSchema>) => {
      const subject = init.subject as string;
      asked.push(subject);
      if (held) {
        held.asked();
        await held.answer;
      }
      if (!humans.has(subject)) humans.set(subject, `human-${++made}`);
      return create(ResolveSignedInHumanResponseSchema, { svcUserId: humans.get(subject) as string });
    },
  };
}

describe("user sessions in the gateway", () => {
  let jwks: Server;
  let privateKey: CryptoKey;
  let jwksUrl: string;

  beforeAll(async () => {
    const pair = await generateKeyPair("ES256");
    privateKey = pair.privateKey;
    const key: JWK = { ...(await exportJWK(pair.publicKey)), kid: "k1", alg: "ES256", use: "sig" };
    jwks = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: [key] }));
    }).listen(0, "127.0.0.1");
    await once(jwks, "listening");
    jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks`;
  });
  afterAll(() => {
    jwks.close();
  });

  const token = (subject: string, lifeSeconds = 3600) =>
    new SignJWT({ email: `${subject}@example.test`, email_verified: true })
      .setProtectedHeader({ alg: "ES256", kid: "k1" })
      .setIssuer(issuer)
      .setAudience(audience)
      .setSubject(subject)
      .setIssuedAt(clock.now())
      .setExpirationTime(new Date(clock.now().getTime() + lifeSeconds * 1000))
      .sign(privateKey);

  const resolverWith = (account: ReturnType<typeof fakeAccount>, cacheTtlMs = 3_600_000) =>
    userSessionResolver({
      oidc: loadOidcConfig({
        GATEWAY_OIDC_ISSUER: issuer,
        GATEWAY_OIDC_JWKS_URL: jwksUrl,
        GATEWAY_OIDC_AUDIENCE: audience,
      }),
      account,
      clock,
      cacheTtlMs,
    });
  const whom = async (resolver: ReturnType<typeof resolverWith>, session: string) => {
    const resolution = await resolver.resolve(session, request);
    return resolution.ok ? resolution.credential.caller.credentialId : resolution.failure;
  };

  test("a session's later requests name the same person without asking account again", async () => {
    const account = fakeAccount();
    const resolver = resolverWith(account);
    const ada = await token("ada");
    expect(await whom(resolver, ada)).toBe("human-1");
    expect(await whom(resolver, ada)).toBe("human-1");
    expect(account.asked).toEqual(["ada"]);
    // Another token of the same identity is verified and asked about once too.
    clock.advance(1000);
    expect(await whom(resolver, await token("ada"))).toBe("human-1");
    expect(account.asked).toEqual(["ada", "ada"]);
  });

  test("an answer is never kept past its token's exp", async () => {
    const account = fakeAccount();
    const resolver = resolverWith(account);
    const brief = await token("bea", 60);
    expect(await whom(resolver, brief)).toBe("human-1");
    clock.advance(59_000);
    expect(await whom(resolver, brief)).toBe("human-1");
    clock.advance(1_000);
    expect(await whom(resolver, brief)).toBe("invalid_key");
    expect(account.asked).toEqual(["bea"]);
  });

  test("without a cache TTL every request verifies and asks", async () => {
    const account = fakeAccount();
    const resolver = resolverWith(account, 0);
    const cy = await token("cy");
    expect(await whom(resolver, cy)).toBe("human-1");
    expect(await whom(resolver, cy)).toBe("human-1");
    expect(account.asked).toEqual(["cy", "cy"]);
  });

  test("a deleted person's sessions are resolved afresh, everyone else's stay kept", async () => {
    const account = fakeAccount();
    const resolver = resolverWith(account);
    const [dee, eve] = [await token("dee"), await token("eve")];
    expect([await whom(resolver, dee), await whom(resolver, eve)]).toEqual(["human-1", "human-2"]);
    account.humans.delete("dee");
    resolver.forgetHuman("human-1");
    expect([await whom(resolver, dee), await whom(resolver, eve)]).toEqual(["human-3", "human-2"]);
    expect(account.asked).toEqual(["dee", "eve", "dee"]);
  });

  test("an answer asked for before a deletion was heard is used once, never kept", async () => {
    const account = fakeAccount();
    const resolver = resolverWith(account);
    const fay = await token("fay");
    const answer = account.holdAnswers();
    const first = whom(resolver, fay);
    await answer.asked;
    resolver.forgetHuman("someone-else");
    answer.release();
    expect(await first).toBe("human-1");
    expect(await whom(resolver, fay)).toBe("human-1");
    expect(account.asked).toEqual(["fay", "fay"]);
  });

  test("after a gap in the credential stream every session is resolved afresh", async () => {
    const account = fakeAccount();
    const resolver = resolverWith(account);
    const [gus, hal] = [await token("gus"), await token("hal")];
    await whom(resolver, gus);
    await whom(resolver, hal);
    resolver.forgetAll();
    await whom(resolver, gus);
    await whom(resolver, hal);
    expect(account.asked).toEqual(["gus", "hal", "gus", "hal"]);
  });

  test("a token whose signature does not verify is refused without asking account", async () => {
    const account = fakeAccount();
    const resolver = resolverWith(account);
    const forged = `${(await token("ivy")).slice(0, -4)}AAAA`;
    expect(await whom(resolver, forged)).toBe("invalid_key");
    expect(await whom(resolver, forged)).toBe("invalid_key");
    expect(account.asked).toEqual([]);
  });
});
