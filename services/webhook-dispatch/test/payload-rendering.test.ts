import { create } from "@bufbuild/protobuf";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { EventSchema } from "@svc/proto/events/v1/events_pb.js";
import { describe, expect, it } from "vitest";
import { renderPayload, reservedMetadataKeys } from "../src/delivery/payload-rendering.ts";
import { at, envelope } from "./support/events.ts";

const org = "org-render";
const requestId = "req_0123456789abcdef0123456789abcdef";
const cardId = "6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f";
const agentRequestId = "1b2c3d4e-5f60-4718-9a2b-3c4d5e6f7a8b";

/** The exact body text: key order included, since the body is what the partner's parser sees. */
function bodyOf(event: ReturnType<typeof envelope>): string {
  const rendering = renderPayload(event);
  if (rendering.kind !== "rendered") throw new Error(`not rendered: ${JSON.stringify(rendering)}`);
  return rendering.body.toString("utf8");
}

describe("payload rendering, one shape per type", () => {
  it("gate.human_verified carries environment, product and only the partner's own metadata", () => {
    const metadata = Object.fromEntries([...reservedMetadataKeys].map((key) => [key, "reserved"]));
    const body = bodyOf(
      envelope(org, {
        case: "gateHumanVerified",
        value: {
          eventId: requestId,
          requestId,
          verifiedAt: at("2026-11-22T10:00:01.250Z"),
          verdict: "pass",
          trusted: true,
          firstTime: true,
          handle: "OP_AbCdEf123456",
          environment: "production",
          product: "census",
          metadata: { ...metadata, order_id: "A-1001", nested: { scope: "kept inside" } },
        },
      }),
    );
    expect(body).toBe(
      JSON.stringify({
        type: "gate.human_verified",
        event_id: requestId,
        request_id: requestId,
        verified_at: "2026-11-22T10:00:01.250Z",
        verdict: "pass",
        trusted: true,
        first_time: true,
        handle: "OP_AbCdEf123456",
        environment: "production",
        product: "census",
        metadata: { order_id: "A-1001", nested: { scope: "kept inside" } },
      }),
    );
  });

  it("gate.human_verified leaves out handle when not trusted, and product and metadata when absent or empty", () => {
    const body = bodyOf(
      envelope(
        org,
        {
          case: "gateHumanVerified",
          value: {
            eventId: requestId,
            requestId,
            verifiedAt: at("2026-11-22T10:00:01Z"),
            verdict: "pass",
            trusted: false,
            firstTime: false,
            handle: "OP_ShouldNotShow",
            metadata: { scope: "reserved only" },
          },
        },
        { environment: Environment.DEVELOPMENT },
      ),
    );
    expect(body).toBe(
      JSON.stringify({
        type: "gate.human_verified",
        event_id: requestId,
        request_id: requestId,
        verified_at: "2026-11-22T10:00:01.000Z",
        verdict: "pass",
        trusted: false,
        first_time: false,
        environment: "development",
      }),
    );
  });

  it("gate.unavailable, failure shape, with the link-conflict codes", () => {
    const body = bodyOf(
      envelope(org, {
        case: "gateUnavailable",
        value: {
          eventId: requestId,
          requestId,
          failedAt: at("2026-11-22T10:00:02Z"),
          verdict: "unavailable",
          reason: "internal_error",
          errorMessage: "account already secured",
          failureCode: "already_trusted",
          failureName: "account_already_secured_here",
          environment: "development",
          product: "census",
          metadata: { order_id: "A-1", failure_code: "partner's own value is reserved" },
        },
      }),
    );
    expect(body).toBe(
      JSON.stringify({
        type: "gate.unavailable",
        event_id: requestId,
        request_id: requestId,
        failed_at: "2026-11-22T10:00:02.000Z",
        verdict: "unavailable",
        reason: "internal_error",
        error_message: "account already secured",
        failure_code: "already_trusted",
        failure_name: "account_already_secured_here",
        environment: "development",
        product: "census",
        metadata: { order_id: "A-1" },
      }),
    );
  });

  it("gate.unavailable, expiry shape: expired_at and no reason or error_message", () => {
    const body = bodyOf(
      envelope(org, {
        case: "gateUnavailable",
        value: {
          eventId: requestId,
          requestId,
          expiredAt: at("2026-11-22T10:05:00Z"),
          verdict: "unavailable",
          environment: "production",
        },
      }),
    );
    expect(body).toBe(
      JSON.stringify({
        type: "gate.unavailable",
        event_id: requestId,
        request_id: requestId,
        expired_at: "2026-11-22T10:05:00.000Z",
        verdict: "unavailable",
        environment: "production",
      }),
    );
  });

  it("account.secured: surface_id null when secured at a gate, no environment", () => {
    const body = bodyOf(
      envelope(org, {
        case: "accountSecured",
        value: { handle: "OP_AbCdEf123456", securedAt: at("2026-11-22T10:00:01Z") },
      }),
    );
    expect(body).toBe(
      JSON.stringify({
        type: "account.secured",
        handle: "OP_AbCdEf123456",
        secured_at: "2026-11-22T10:00:01.000Z",
        surface_id: null,
      }),
    );
  });

  it("account.secured: surface_id when secured through a Link-with-ID surface", () => {
    const body = bodyOf(
      envelope(org, {
        case: "accountSecured",
        value: { handle: "OP_AbCdEf123456", securedAt: at("2026-11-22T10:00:01Z"), surfaceId: cardId },
      }),
    );
    expect(JSON.parse(body)).toEqual({
      type: "account.secured",
      handle: "OP_AbCdEf123456",
      secured_at: "2026-11-22T10:00:01.000Z",
      surface_id: cardId,
    });
  });

  it("account.unlinked: by, reason and a nullable surface_id, no request_id, event_id or environment", () => {
    const body = bodyOf(
      envelope(org, {
        case: "accountUnlinked",
        value: { handle: "OP_AbCdEf123456", by: "human", unlinkedAt: at("2026-11-22T11:00:00Z"), reason: "human" },
      }),
    );
    expect(body).toBe(
      JSON.stringify({
        type: "account.unlinked",
        handle: "OP_AbCdEf123456",
        by: "human",
        unlinked_at: "2026-11-22T11:00:00.000Z",
        reason: "human",
        surface_id: null,
      }),
    );
  });

  it("agents_ask.card.proposed, with source only for sandbox proposals", () => {
    const value = {
      requestId: agentRequestId,
      cardId,
      agentId: "agent-1",
      agentName: "Billing Bot",
      category: "payments",
      summaryTitle: "Pay invoice 42",
      ttlAt: at("2026-11-22T10:10:00Z"),
    };
    const expected = {
      type: "agents_ask.card.proposed",
      request_id: agentRequestId,
      card_id: cardId,
      agent_id: "agent-1",
      agent_name: "Billing Bot",
      category: "payments",
      summary_title: "Pay invoice 42",
      ttl_at: "2026-11-22T10:10:00.000Z",
    };
    expect(bodyOf(envelope(org, { case: "agentsAskCardProposed", value }))).toBe(JSON.stringify(expected));
    expect(
      bodyOf(envelope(org, { case: "agentsAskCardProposed", value: { ...value, source: "console_sandbox" } })),
    ).toBe(JSON.stringify({ ...expected, source: "console_sandbox" }));
  });

  for (const [kind, type, outcome] of [
    ["agentsAskResolutionConfirmed", "agents_ask.resolution.confirmed", "confirmed"],
    ["agentsAskResolutionDenied", "agents_ask.resolution.denied", "denied"],
  ] as const) {
    it(`${type}: outcome ${outcome}, proof token, metadata with card, ceremony and agent`, () => {
      const body = bodyOf(
        envelope(org, {
          case: kind,
          value: {
            requestId: agentRequestId,
            resolutionId: "res-1",
            outcome,
            proofToken: "eyJ.e30.sig",
            metadata: { cardId, ceremonyId: "cer-1", agentId: "agent-1", agentName: "Billing Bot" },
          },
        }),
      );
      expect(body).toBe(
        JSON.stringify({
          type,
          request_id: agentRequestId,
          resolution_id: "res-1",
          outcome,
          proof_token: "eyJ.e30.sig",
          metadata: { card_id: cardId, ceremony_id: "cer-1", agent_id: "agent-1", agent_name: "Billing Bot" },
        }),
      );
    });
  }

  it("agents_ask.resolution.expired: outcome expired, no proof", () => {
    const body = bodyOf(
      envelope(org, {
        case: "agentsAskResolutionExpired",
        value: {
          requestId: agentRequestId,
          cardId,
          outcome: "expired",
          metadata: { agentId: "agent-1", agentName: "Billing Bot", summaryTitle: "Pay invoice 42" },
        },
      }),
    );
    expect(body).toBe(
      JSON.stringify({
        type: "agents_ask.resolution.expired",
        request_id: agentRequestId,
        card_id: cardId,
        outcome: "expired",
        metadata: { agent_id: "agent-1", agent_name: "Billing Bot", summary_title: "Pay invoice 42" },
      }),
    );
  });
});

describe("events that cannot be rendered", () => {
  it("a payload case this build does not know is reported as such, not as invalid", () => {
    expect(renderPayload(create(EventSchema, { dedupKey: "k", organizationId: org }))).toEqual({
      kind: "unknown_type",
    });
  });

  it("gate.unavailable with both shapes at once breaks the contract", () => {
    const rendering = renderPayload(
      envelope(org, {
        case: "gateUnavailable",
        value: {
          eventId: requestId,
          requestId,
          failedAt: at("2026-11-22T10:00:02Z"),
          expiredAt: at("2026-11-22T10:05:00Z"),
          environment: "development",
        },
      }),
    );
    expect(rendering).toEqual({ kind: "invalid", reason: "gate.unavailable carries both failed_at and expired_at" });
  });

  it("a resolution whose outcome contradicts its type breaks the contract", () => {
    const rendering = renderPayload(
      envelope(org, {
        case: "agentsAskResolutionConfirmed",
        value: {
          requestId: agentRequestId,
          resolutionId: "r",
          outcome: "denied",
          proofToken: "t",
          metadata: { cardId, ceremonyId: "c", agentId: "a", agentName: "A" },
        },
      }),
    );
    expect(rendering.kind).toBe("invalid");
  });

  it("a required timestamp that is missing breaks the contract", () => {
    const rendering = renderPayload(envelope(org, { case: "accountSecured", value: { handle: "OP_AbCdEf123456" } }));
    expect(rendering).toEqual({ kind: "invalid", reason: "secured_at is missing" });
  });
});
