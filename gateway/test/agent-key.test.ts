import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ManualClock } from "@svc/platform";
import {
  AgentKeyRefusal,
  type AuthenticateAgentKeyRequest,
  AuthenticateAgentKeyRequestSchema,
  AuthenticateAgentKeyResponseSchema,
} from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { CallerSchema, CredentialKind, Environment } from "@svc/proto/common/v1/caller_pb.js";
import { describe, expect, test } from "vitest";
import { agentKeyCause, agentKeyRefusalMessage, agentKeyResolver } from "../src/credentials/agent-key.ts";
import { AnswerCache } from "../src/credentials/answer-cache.ts";

const clock = new ManualClock("2026-11-22T10:00:00Z");
const secret = "A".repeat(43);
const key = (name: string) => `svc_agent_${name}__${secret}`;

/** agentlink's answers by agent name, counting the questions asked. */
function fakeAgentlink(answers: Record<string, AgentKeyRefusal>) {
  const asked: AuthenticateAgentKeyRequest[] = [];
  return {
    asked,
    authenticateAgentKey: async (init: MessageInitShape<typeof AuthenticateAgentKeyRequestSchema>) => {
      const request = create(AuthenticateAgentKeyRequestSchema, init);
      asked.push(request);
      const name = request.agentKey.slice("svc_agent_".length, -45);
      const refusal = answers[name] ?? AgentKeyRefusal.UNSPECIFIED;
      return create(AuthenticateAgentKeyResponseSchema, {
        refusal,
        ...(refusal === AgentKeyRefusal.UNSPECIFIED && {
          caller: create(CallerSchema, {
            organizationId: "org-1",
            environment: Environment.DEVELOPMENT,
            credentialId: `agent-${name}`,
            credentialKind: CredentialKind.AGENT_KEY,
          }),
        }),
      });
    },
  };
}

const resolverWith = (agentlink: ReturnType<typeof fakeAgentlink>, cacheTtlMs = 5000) =>
  agentKeyResolver({ agentlink, clock, environments: ["production"], cacheTtlMs });

describe("agent keys in the gateway", () => {
  test("recognises the prefix and refuses any other form without asking agentlink", async () => {
    const agentlink = fakeAgentlink({});
    const resolver = resolverWith(agentlink);
    expect(resolver.recognizes("svc_agent_x")).toBe(true);
    expect(resolver.recognizes("svc_dev_abc")).toBe(false);
    for (const malformed of [
      "svc_agent_x",
      `svc_agent_ab__${secret}`,
      `svc_agent_bot__${secret}=`,
      `svc_agent_bot_${secret}`,
    ])
      expect(await resolver.resolve(malformed, { origin: undefined })).toEqual({
        ok: false,
        failure: "wrong_key_form",
        message: agentKeyRefusalMessage,
      });
    expect(agentlink.asked).toEqual([]);
  });

  test("asks agentlink with the environments it serves, and maps each refusal to its cause", async () => {
    const agentlink = fakeAgentlink({
      nobody: AgentKeyRefusal.UNKNOWN_AGENT_NAME,
      elsewhere: AgentKeyRefusal.OTHER_ENVIRONMENT,
      revoked: AgentKeyRefusal.REVOKED_AGENT,
      guessed: AgentKeyRefusal.WRONG_SECRET,
    });
    const resolver = resolverWith(agentlink);
    const failure = async (name: string) => {
      const resolution = await resolver.resolve(key(name), { origin: undefined });
      return resolution.ok ? "accepted" : [resolution.failure, resolution.message];
    };
    expect(await failure("nobody")).toEqual(["unknown_agent_name", agentKeyRefusalMessage]);
    expect(await failure("elsewhere")).toEqual(["other_environment", agentKeyRefusalMessage]);
    expect(await failure("revoked")).toEqual(["revoked_agent", agentKeyRefusalMessage]);
    expect(await failure("guessed")).toEqual(["wrong_secret", agentKeyRefusalMessage]);
    expect(await failure("travel")).toBe("accepted");
    expect(agentlink.asked[0]?.environments).toEqual([Environment.PRODUCTION]);
  });

  test("reuses agentlink's answers, accepted and refused, for at least 80% of the TTL and never past it", async () => {
    clock.set("2026-11-22T10:00:00Z");
    const agentlink = fakeAgentlink({ guessed: AgentKeyRefusal.WRONG_SECRET });
    const resolver = resolverWith(agentlink);
    const accepted = await resolver.resolve(key("travel"), { origin: undefined });
    expect(accepted).toMatchObject({
      ok: true,
      credential: { kind: "agent_key", caller: { credentialId: "agent-travel" } },
    });
    await resolver.resolve(key("guessed"), { origin: undefined });
    clock.advance(3999);
    expect(await resolver.resolve(key("travel"), { origin: undefined })).toEqual(accepted);
    expect(await resolver.resolve(key("guessed"), { origin: undefined })).toMatchObject({ failure: "wrong_secret" });
    expect(agentlink.asked).toHaveLength(2);
    clock.advance(1001);
    await resolver.resolve(key("travel"), { origin: undefined });
    await resolver.resolve(key("guessed"), { origin: undefined });
    expect(agentlink.asked).toHaveLength(4);
  });

  test("asks once for concurrent requests with a key it does not remember, and again after a failure", async () => {
    clock.set("2026-11-22T10:00:00Z");
    const agentlink = fakeAgentlink({});
    let failNext = true;
    const resolver = agentKeyResolver({
      agentlink: {
        authenticateAgentKey: async (init) => {
          const answer = await agentlink.authenticateAgentKey(init);
          if (failNext) throw new Error("agentlink unreachable");
          return answer;
        },
      },
      clock,
      environments: ["development"],
      cacheTtlMs: 5000,
    });
    const burst = () =>
      Promise.allSettled(Array.from({ length: 50 }, () => resolver.resolve(key("travel"), { origin: undefined })));
    const failed = await burst();
    expect(failed.every((outcome) => outcome.status === "rejected")).toBe(true);
    expect(agentlink.asked).toHaveLength(1);

    failNext = false;
    const answered = await burst();
    expect(answered.every((outcome) => outcome.status === "fulfilled" && outcome.value.ok)).toBe(true);
    expect(agentlink.asked).toHaveLength(2);
  });

  test("forgets a changed agent's answers at once, other agents' not, and everything after a gap", async () => {
    clock.set("2026-11-22T10:00:00Z");
    const agentlink = fakeAgentlink({});
    const resolver = resolverWith(agentlink);
    const resolveAll = () =>
      Promise.all(["travel", "shop"].map((name) => resolver.resolve(key(name), { origin: undefined })));
    await resolveAll();
    expect(agentlink.asked).toHaveLength(2);

    resolver.forgetAgent("agent-travel");
    await resolveAll();
    expect(agentlink.asked.map((request) => request.agentKey)).toEqual([key("travel"), key("shop"), key("travel")]);

    resolver.forgetAll();
    await resolveAll();
    expect(agentlink.asked).toHaveLength(5);
    await resolveAll();
    expect(agentlink.asked).toHaveLength(5);
  });

  test("does not keep an answer asked for before a change was heard, nor share it with later requests", async () => {
    clock.set("2026-11-22T10:00:00Z");
    const agentlink = fakeAgentlink({ revoked: AgentKeyRefusal.REVOKED_AGENT });
    let revoked = false;
    let answerFirst: (() => void) | undefined;
    const resolver = agentKeyResolver({
      agentlink: {
        authenticateAgentKey: async (init) => {
          if (revoked) return agentlink.authenticateAgentKey({ ...init, agentKey: key("revoked") });
          // The question asked before the revoke is answered (accepted) only after it was heard.
          await new Promise<void>((resolve) => {
            answerFirst = resolve;
          });
          return agentlink.authenticateAgentKey(init);
        },
      },
      clock,
      environments: ["development"],
      cacheTtlMs: 5000,
    });
    const beforeRevoke = resolver.resolve(key("travel"), { origin: undefined });
    expect(answerFirst).toBeDefined();
    revoked = true;
    resolver.forgetAgent("agent-travel");
    const afterRevoke = resolver.resolve(key("travel"), { origin: undefined });
    answerFirst!();
    expect(await beforeRevoke).toMatchObject({ ok: true });
    expect(await afterRevoke).toMatchObject({ ok: false, failure: "revoked_agent" });
    expect(await resolver.resolve(key("travel"), { origin: undefined })).toMatchObject({
      ok: false,
      failure: "revoked_agent",
    });
  });

  test("keeps an accepted key's answer no longer than agentlink says the key works (a rotated key's overlap)", async () => {
    clock.set("2026-11-22T10:00:00Z");
    const agentlink = fakeAgentlink({});
    const resolver = agentKeyResolver({
      agentlink: {
        authenticateAgentKey: async (init) => {
          const answer = await agentlink.authenticateAgentKey(init);
          answer.keyExpiresAt = timestampFromDate(new Date("2026-11-22T10:00:01Z"));
          return answer;
        },
      },
      clock,
      environments: ["development"],
      cacheTtlMs: 5000,
    });
    await resolver.resolve(key("travel"), { origin: undefined });
    clock.advance(999);
    await resolver.resolve(key("travel"), { origin: undefined });
    expect(agentlink.asked).toHaveLength(1);
    clock.advance(1);
    await resolver.resolve(key("travel"), { origin: undefined });
    expect(agentlink.asked).toHaveLength(2);
  });

  test("asks every time with a TTL of 0", async () => {
    const agentlink = fakeAgentlink({});
    const resolver = resolverWith(agentlink, 0);
    await resolver.resolve(key("travel"), { origin: undefined });
    await resolver.resolve(key("travel"), { origin: undefined });
    expect(agentlink.asked).toHaveLength(2);
  });

  test("logs every refusal of an agent-key operation as one of the six causes", () => {
    expect(agentKeyCause("missing_bearer")).toBe("missing_bearer");
    expect(agentKeyCause("unrecognized_credential")).toBe("wrong_key_form");
    expect(agentKeyCause("credential_not_accepted")).toBe("wrong_key_form");
    expect(agentKeyCause("wrong_key_form")).toBe("wrong_key_form");
    expect(agentKeyCause("unknown_agent_name")).toBe("unknown_agent_name");
    expect(agentKeyCause("other_environment")).toBe("other_environment");
    expect(agentKeyCause("revoked_agent")).toBe("revoked_agent");
    expect(agentKeyCause("wrong_secret")).toBe("wrong_secret");
  });
});

describe("answer cache", () => {
  test("keeps at most its capacity, dropping the least recently used first", () => {
    const cache = new AnswerCache<number>({ clock, ttlMs: 60_000, capacity: 2 });
    cache.set("a", 1);
    cache.set("b", 2);
    expect(cache.get("a")).toBe(1);
    cache.set("c", 3);
    expect([cache.get("a"), cache.get("b"), cache.get("c"), cache.size]).toEqual([1, undefined, 3, 2]);
  });

  test("gives each entry 80-100% of the TTL, drawn apart, so entries cached together do not all expire together", () => {
    clock.set("2026-11-22T10:00:00Z");
    const draws = [0, 0.5, 0.999_999];
    const cache = new AnswerCache<number>({ clock, ttlMs: 10_000, capacity: 10, random: () => draws.shift() ?? 0 });
    cache.set("whole", 1);
    cache.set("nine tenths", 2);
    cache.set("four fifths", 3);
    const present = () => ["whole", "nine tenths", "four fifths"].filter((k) => cache.get(k) !== undefined);
    clock.advance(7_999);
    expect(present()).toEqual(["whole", "nine tenths", "four fifths"]);
    clock.advance(2);
    expect(present()).toEqual(["whole", "nine tenths"]);
    clock.advance(999);
    expect(present()).toEqual(["whole"]);
    clock.advance(1_000);
    expect(present()).toEqual([]);
  });

  test("keeps an answer no longer than its own end, however long the TTL", () => {
    clock.set("2026-11-22T10:00:00Z");
    const cache = new AnswerCache<number>({ clock, ttlMs: 60_000, capacity: 10, random: () => 0 });
    cache.set("rotated", 1, new Date("2026-11-22T10:00:02Z"));
    clock.advance(1_999);
    expect(cache.get("rotated")).toBe(1);
    clock.advance(1);
    expect(cache.get("rotated")).toBeUndefined();
  });

  test("forgets the entries a predicate matches, or all of them", () => {
    const cache = new AnswerCache<number>({ clock, ttlMs: 60_000, capacity: 10 });
    for (const [k, v] of [
      ["a", 1],
      ["b", 2],
      ["c", 3],
    ] as const)
      cache.set(k, v);
    cache.forget((value) => value % 2 === 1);
    expect([cache.get("a"), cache.get("b"), cache.get("c"), cache.size]).toEqual([undefined, 2, undefined, 1]);
    cache.forget();
    expect(cache.size).toBe(0);
  });
});
