import { describe, expect, it } from "vitest";
import {
  type KeyWindow,
  keyState,
  newestKey,
  planRotation,
  rotationDue,
  signingKeyAt,
} from "../src/rotation-schedule.ts";

const at = (iso: string) => new Date(iso);
const ms = (iso: string) => at(iso).getTime();
const minutes = (n: number) => n * 60_000;
const days = (n: number) => n * 86_400_000;
const policy = { publishLeadMs: minutes(5), retainMs: days(400) };

const retired: KeyWindow = {
  publishedAt: at("2026-01-01T00:00:00Z"),
  signsFrom: at("2026-01-01T00:00:00Z"),
  retiredAt: at("2026-02-01T00:05:00Z"),
  unpublishAt: at("2027-03-08T00:05:00Z"),
};
const successor: KeyWindow = {
  publishedAt: at("2026-02-01T00:00:00Z"),
  signsFrom: at("2026-02-01T00:05:00Z"),
  retiredAt: null,
  unpublishAt: null,
};

describe("key state at an instant", () => {
  it("is unpublished before publication, pending until it signs, active until retired, retired until unpublished", () => {
    expect(keyState(successor, at("2026-01-31T23:59:59.999Z"))).toBe("unpublished");
    expect(keyState(successor, at("2026-02-01T00:00:00Z"))).toBe("pending");
    expect(keyState(successor, at("2026-02-01T00:04:59.999Z"))).toBe("pending");
    expect(keyState(successor, at("2026-02-01T00:05:00Z"))).toBe("active");
    expect(keyState(successor, at("2099-01-01T00:00:00Z"))).toBe("active");
    expect(keyState(retired, at("2026-02-01T00:04:59.999Z"))).toBe("active");
    expect(keyState(retired, at("2026-02-01T00:05:00Z"))).toBe("retired");
    expect(keyState(retired, at("2027-03-08T00:04:59.999Z"))).toBe("retired");
    expect(keyState(retired, at("2027-03-08T00:05:00Z"))).toBe("unpublished");
  });

  it("hands signing from the old key to the new one at one instant, with no gap and no overlap", () => {
    const ring = [
      { name: "old", window: retired },
      { name: "new", window: successor },
    ];
    expect(signingKeyAt(ring, at("2026-02-01T00:04:59.999Z"))?.name).toBe("old");
    expect(signingKeyAt(ring, at("2026-02-01T00:05:00Z"))?.name).toBe("new");
    expect(signingKeyAt(ring, at("2025-12-31T23:59:59Z"))).toBeUndefined();
    expect(newestKey(ring)?.name).toBe("new");
  });
});

describe("rotation plan", () => {
  it("lets the first key of an empty ring sign at once", () => {
    const now = at("2026-01-01T00:00:00Z");
    expect(planRotation(undefined, now, policy)).toEqual({
      window: { publishedAt: now, signsFrom: now, retiredAt: null, unpublishAt: null },
    });
  });

  it("publishes a new key one lead before it signs and retires the newest key then, keeping it published for the retention", () => {
    const current: KeyWindow = {
      publishedAt: at("2026-01-01T00:00:00Z"),
      signsFrom: at("2026-01-01T00:00:00Z"),
      retiredAt: null,
      unpublishAt: null,
    };
    const plan = planRotation(current, at("2026-02-01T00:00:00Z"), policy);
    expect(plan.window).toEqual(successor);
    expect(plan.retirePrevious).toEqual({ retiredAt: retired.retiredAt, unpublishAt: retired.unpublishAt });
    expect(plan.retirePrevious!.unpublishAt.getTime() - plan.retirePrevious!.retiredAt.getTime()).toBe(days(400));
  });

  it("never lets a new key start before the pending key it succeeds", () => {
    const pending: KeyWindow = {
      publishedAt: at("2026-02-01T00:00:00Z"),
      signsFrom: at("2026-02-01T01:00:00Z"),
      retiredAt: null,
      unpublishAt: null,
    };
    const plan = planRotation(pending, at("2026-02-01T00:10:00Z"), policy);
    expect(plan.window.signsFrom).toEqual(at("2026-02-01T01:00:00Z"));
  });

  it("is due when the newest key reaches the schedule's age, never when the schedule is off, always for an empty ring", () => {
    const every = days(30);
    expect(rotationDue(successor, new Date(ms("2026-02-01T00:00:00Z") + every - 1), every)).toBe(false);
    expect(rotationDue(successor, new Date(ms("2026-02-01T00:00:00Z") + every), every)).toBe(true);
    expect(rotationDue(successor, at("2030-01-01T00:00:00Z"), 0)).toBe(false);
    expect(rotationDue(undefined, at("2030-01-01T00:00:00Z"), 0)).toBe(true);
  });
});
