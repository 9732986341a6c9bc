import { fromBinary } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { EventSchema } from "@svc/proto/events/v1/events_pb.js";
import { describe, expect, it } from "vitest";
import {
  eventMetadata,
  type GateEventSubject,
  humanVerified,
  unavailableExpired,
  unavailableFailed,
} from "../src/events/gate-events.ts";

const subject: GateEventSubject = {
  requestId: `req_${"a".repeat(32)}`,
  organizationId: "0b4f8c1e-0000-4000-8000-000000000001",
  environment: "production",
  metadata: { cart: "42" },
};
const at = new Date("2026-11-20T12:00:00Z");
const decode = (payload: Uint8Array) => fromBinary(EventSchema, payload);

describe("gate event metadata", () => {
  it("takes the session's keys, overridden by the link's", () => {
    expect(eventMetadata({ a: 1, b: "session" }, { b: "link", c: true })).toEqual({ a: 1, b: "link", c: true });
  });
  it("is omitted when the partner gave none", () => {
    expect(eventMetadata(null, undefined)).toBeUndefined();
    expect(eventMetadata({}, {})).toBeUndefined();
    expect(eventMetadata(null, { order: 7 })).toEqual({ order: 7 });
  });
});

describe("gate event envelopes", () => {
  it("gate.human_verified: dedup key type + request_id, shared fields, handle only when trusted", () => {
    const message = humanVerified(subject, {
      verifiedAt: at,
      trusted: false,
      firstTime: false,
      handle: "OP_abcdefghijkl",
    });
    expect(message).toMatchObject({
      type: "gate.human_verified",
      messageId: `gate.human_verified:${subject.requestId}`,
    });
    const event = decode(message.payload);
    expect(event).toMatchObject({
      dedupKey: message.messageId,
      organizationId: subject.organizationId,
      environment: Environment.PRODUCTION,
    });
    expect(event.payload.case).toBe("gateHumanVerified");
    const value = event.payload.value as {
      eventId: string;
      handle?: string;
      product?: string;
      metadata?: unknown;
      verdict: string;
      environment: string;
    };
    expect(value).toMatchObject({
      eventId: subject.requestId,
      verdict: "pass",
      product: "census",
      environment: "production",
      metadata: { cart: "42" },
    });
    expect(value.handle).toBeUndefined();
    const trusted = decode(
      humanVerified(subject, { verifiedAt: at, trusted: true, firstTime: true, handle: "OP_abcdefghijkl" }).payload,
    );
    expect((trusted.payload.value as { handle?: string }).handle).toBe("OP_abcdefghijkl");
  });

  it("gate.unavailable in its failure shape carries failed_at and reason, and the link refusal codes", () => {
    const event = decode(
      unavailableFailed(subject, {
        failedAt: at,
        reason: "internal_error",
        errorMessage: "refused",
        refusal: { failureCode: "already_trusted", failureName: "account_already_secured_here" },
      }).payload,
    );
    const value = event.payload.value as {
      failedAt?: { seconds: bigint };
      expiredAt?: unknown;
      reason?: string;
      failureCode?: string;
      failureName?: string;
    };
    expect(value.expiredAt).toBeUndefined();
    expect(timestampDate(value.failedAt as never)).toEqual(at);
    expect(value).toMatchObject({
      reason: "internal_error",
      failureCode: "already_trusted",
      failureName: "account_already_secured_here",
    });
  });

  it("gate.unavailable in its expiry shape carries expired_at only, no reason or message", () => {
    const message = unavailableExpired({ ...subject, metadata: null }, at, new Date(at.getTime() + 5000));
    expect(message.messageId).toBe(`gate.unavailable:${subject.requestId}`);
    const value = decode(message.payload).payload.value as {
      failedAt?: unknown;
      expiredAt?: unknown;
      reason?: string;
      errorMessage?: string;
      metadata?: unknown;
    };
    expect(value.failedAt).toBeUndefined();
    expect(timestampDate(value.expiredAt as never)).toEqual(at);
    expect(value.reason).toBeUndefined();
    expect(value.errorMessage).toBeUndefined();
    expect(value.metadata).toBeUndefined();
  });
});
