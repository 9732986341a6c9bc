import { describe, expect, it } from "vitest";
import { acceptsRequests, parseGateStatus } from "../src/gates/gate-status.ts";

describe("gate status names", () => {
  it("reads the three names as themselves", () => {
    expect(["draft", "active", "archived"].map(parseGateStatus)).toEqual(["draft", "active", "archived"]);
  });

  it("knows no old name: the gateway translates those before they reach this service", () => {
    for (const old of ["pending", "pending_revisions", "approved", "denied", "cancelled"])
      expect(parseGateStatus(old), old).toBeUndefined();
  });

  it("refuses anything else, case included", () => {
    expect(parseGateStatus("Active")).toBeUndefined();
    expect(parseGateStatus("")).toBeUndefined();
    expect(parseGateStatus("live")).toBeUndefined();
  });

  it("lets only an active gate accept requests", () => {
    expect([acceptsRequests("draft"), acceptsRequests("active"), acceptsRequests("archived")]).toEqual([
      false,
      true,
      false,
    ]);
  });
});
