import { describe, expect, it } from "vitest";
import { blockingUser, blocks, type NewRequestFacts, revokedUser } from "../src/requests/blocking-rule.ts";

const now = new Date("2026-11-20T12:00:00Z");
const later = new Date(now.getTime() + 60_000);
const earlier = new Date(now.getTime() - 1);
const facts = (over: Partial<NewRequestFacts>): NewRequestFacts => ({
  gate: "checkout",
  partnerUserRef: undefined,
  sessionPartnerUserId: undefined,
  sessionCredentialKind: "secret_key",
  ...over,
});

describe("the 409 rule", () => {
  describe("clause 1: the same user", () => {
    it("is the partner_user_ref of create-verification-link when given", () => {
      expect(blockingUser(facts({ partnerUserRef: "ref-1", sessionPartnerUserId: "id-1" }))).toBe("ref-1");
    });
    it("is the partner_user_id of create-session otherwise", () => {
      expect(blockingUser(facts({ sessionPartnerUserId: "id-1" }))).toBe("id-1");
      expect(blockingUser(facts({ partnerUserRef: "", sessionPartnerUserId: "id-1" }))).toBe("id-1");
    });
  });

  describe("clause 2: only pending unexpired requests block", () => {
    it("a pending request inside its window blocks", () => {
      expect(blocks({ requestId: "req_a", status: "pending", expiresAt: later }, now)).toBe(true);
    });
    it("a pending request past its window does not", () => {
      expect(blocks({ requestId: "req_a", status: "pending", expiresAt: earlier }, now)).toBe(false);
      expect(blocks({ requestId: "req_a", status: "pending", expiresAt: now }, now)).toBe(false);
    });
    it("completed, failed, expired and pass records never block", () => {
      for (const status of ["completed", "failed", "expired", "pass"])
        expect(blocks({ requestId: "req_a", status, expiresAt: later }, now)).toBe(false);
    });
  });

  describe("clause 3: requests with neither value or naming no gate are not checked", () => {
    it("neither value", () => {
      expect(blockingUser(facts({}))).toBeUndefined();
      expect(blockingUser(facts({ partnerUserRef: "", sessionPartnerUserId: "" }))).toBeUndefined();
    });
    it("no gate", () => {
      expect(blockingUser(facts({ gate: "", partnerUserRef: "ref-1", sessionPartnerUserId: "id-1" }))).toBeUndefined();
    });
  });

  describe("clause 4: a site-key session without partner_user_id is not checked", () => {
    it("even when a partner_user_ref is sent", () => {
      expect(blockingUser(facts({ sessionCredentialKind: "site_key", partnerUserRef: "ref-1" }))).toBeUndefined();
    });
    it("a site-key session with partner_user_id is checked", () => {
      expect(blockingUser(facts({ sessionCredentialKind: "site_key", sessionPartnerUserId: "id-1" }))).toBe("id-1");
      expect(
        blockingUser(
          facts({ sessionCredentialKind: "site_key", sessionPartnerUserId: "id-1", partnerUserRef: "ref-1" }),
        ),
      ).toBe("ref-1");
    });
  });

  describe("clause 5: revoke clears with the user's reference as partner_user_id", () => {
    it("names the same user a request was checked as", () => {
      expect(revokedUser("ref-1")).toBe(blockingUser(facts({ partnerUserRef: "ref-1", sessionPartnerUserId: "id-1" })));
      expect(revokedUser("id-1")).toBe(blockingUser(facts({ sessionPartnerUserId: "id-1" })));
      expect(revokedUser("")).toBeUndefined();
    });
  });

  it("a presence ceremony is not blocked by its own pre-check", () => {
    const preCheck = { requestId: "req_parent", status: "pending", expiresAt: later };
    expect(blocks(preCheck, now, "req_parent")).toBe(false);
    expect(blocks(preCheck, now, "req_other")).toBe(true);
  });
});
