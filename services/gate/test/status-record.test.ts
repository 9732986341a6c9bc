import { describe, expect, it } from "vitest";
import { effectiveStatus, type StoredRequest, statusRecord } from "../src/requests/status-record.ts";

const now = new Date("2026-11-20T12:00:00Z");
const at = (ms: number) => new Date(now.getTime() + ms);
const request = (over: Partial<StoredRequest>): StoredRequest => ({
  status: "pending",
  gateType: "human",
  expiresAt: at(60_000),
  confirmingUntil: null,
  trusted: null,
  firstTime: null,
  failureReason: null,
  ageVerdict: null,
  token: null,
  tokenExpiresAt: null,
  ...over,
});

describe("the status record", () => {
  it("an unknown request is found: false, not_found", () => {
    expect(statusRecord(undefined, now)).toEqual({ found: false, status: "not_found", message: expect.any(String) });
  });

  it("a pending request reads pending with its expiry, and expired from its expiry on, without the sweep", () => {
    expect(statusRecord(request({}), now)).toEqual({
      found: true,
      status: "pending",
      message: expect.any(String),
      expiresAt: at(60_000),
    });
    expect(statusRecord(request({ expiresAt: now }), now).status).toBe("expired");
    expect(effectiveStatus({ status: "pending", expiresAt: at(1), confirmingUntil: null }, now)).toBe("pending");
  });

  it("a pending request whose confirmation began in time reads pending past its window until the hold ends", () => {
    expect(statusRecord(request({ expiresAt: at(-1_000), confirmingUntil: at(1) }), now).status).toBe("pending");
    expect(statusRecord(request({ expiresAt: at(-1_000), confirmingUntil: now }), now).status).toBe("expired");
    // A hold never revives a pass.
    expect(statusRecord(request({ status: "pass", expiresAt: at(-1_000), confirmingUntil: at(1) }), now).status).toBe(
      "expired",
    );
  });

  it("a completed request carries trusted, first_time and the token while the token is valid", () => {
    const completed = request({
      status: "completed",
      trusted: true,
      firstTime: true,
      token: "t",
      tokenExpiresAt: at(1),
      expiresAt: at(-1),
    });
    expect(statusRecord(completed, now)).toMatchObject({
      status: "completed",
      trusted: true,
      firstTime: true,
      token: "t",
    });
    expect(statusRecord({ ...completed, tokenExpiresAt: now }, now).token).toBeUndefined();
  });

  it("an Age Gate's completed record carries age_verdict; a Human Gate's never does", () => {
    expect(
      statusRecord(request({ status: "completed", gateType: "age", ageVerdict: "unavailable" }), now).ageVerdict,
    ).toBe("unavailable");
    expect(
      statusRecord(request({ status: "completed", gateType: "human", ageVerdict: "over" }), now).ageVerdict,
    ).toBeUndefined();
  });

  it("a failed request carries its reason, unavailable by default; nothing of completion", () => {
    expect(statusRecord(request({ status: "failed", failureReason: "already_trusted" }), now)).toMatchObject({
      status: "failed",
      reason: "already_trusted",
    });
    const failed = statusRecord(request({ status: "failed", trusted: false }), now);
    expect(failed.reason).toBe("unavailable");
    expect(failed.trusted).toBeUndefined();
  });

  it("a Recent Presence pass reads pass, then expired at its end (60 s after the check)", () => {
    expect(statusRecord(request({ status: "pass", expiresAt: at(1) }), now).status).toBe("pass");
    expect(statusRecord(request({ status: "pass", expiresAt: now }), now).status).toBe("expired");
  });
});
