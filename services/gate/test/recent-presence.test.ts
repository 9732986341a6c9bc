import { describe, expect, it } from "vitest";
import { presenceLookup, presenceSince } from "../src/requests/recent-presence.ts";

const ref = Buffer.from("ref-hash");

describe("Recent Presence", () => {
  it("looks the person up by svc_user_id when given, even beside a partner_user_ref", () => {
    expect(
      presenceLookup({
        svcUserId: "u-1",
        refHash: ref,
        securesAccount: false,
        ageGate: false,
        presenceCeremony: false,
      }),
    ).toEqual({
      by: "human",
      svcUserId: "u-1",
    });
  });
  it("looks the person up by partner_user_ref otherwise", () => {
    expect(
      presenceLookup({ svcUserId: "", refHash: ref, securesAccount: false, ageGate: false, presenceCeremony: false }),
    ).toEqual({
      by: "reference",
      refHash: ref,
    });
  });
  it("does not apply without either, or to a request that secures an account", () => {
    expect(
      presenceLookup({ svcUserId: "", refHash: null, securesAccount: false, ageGate: false, presenceCeremony: false }),
    ).toBeUndefined();
    expect(
      presenceLookup({ svcUserId: "u-1", refHash: ref, securesAccount: true, ageGate: false, presenceCeremony: false }),
    ).toBeUndefined();
  });
  it("does not apply on an Age Gate, whose result a pass would not carry", () => {
    expect(
      presenceLookup({ svcUserId: "u-1", refHash: ref, securesAccount: false, ageGate: true, presenceCeremony: false }),
    ).toBeUndefined();
    expect(
      presenceLookup({ svcUserId: "", refHash: ref, securesAccount: false, ageGate: true, presenceCeremony: false }),
    ).toBeUndefined();
  });
  it("does not apply to a pre-check's presence ceremony: the pre-check already looked", () => {
    expect(
      presenceLookup({ svcUserId: "u-1", refHash: ref, securesAccount: false, ageGate: false, presenceCeremony: true }),
    ).toBeUndefined();
  });
  it("counts completions within the window", () => {
    expect(presenceSince(new Date("2026-11-20T12:10:00Z"), 600_000)).toEqual(new Date("2026-11-20T12:00:00Z"));
  });
});
