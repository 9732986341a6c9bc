import { describe, expect, it } from "vitest";
import { acceptsRequests, legacyGateStatus, parseGateStatus } from "../src/gates/gate-status.ts";

describe("gate status names", () => {
  it("reads the new names as themselves", () => {
    expect(["draft", "active", "archived"].map(parseGateStatus)).toEqual(["draft", "active", "archived"]);
  });

  it("reads every old name as its new one", () => {
    expect(parseGateStatus("pending")).toBe("draft");
    expect(parseGateStatus("pending_revisions")).toBe("draft");
    expect(parseGateStatus("approved")).toBe("active");
    expect(parseGateStatus("denied")).toBe("archived");
    expect(parseGateStatus("cancelled")).toBe("archived");
  });

  it("refuses anything else, case included", () => {
    expect(parseGateStatus("Active")).toBeUndefined();
    expect(parseGateStatus("")).toBeUndefined();
    expect(parseGateStatus("live")).toBeUndefined();
  });

  it("gives each new name an old name that reads back as the same status", () => {
    for (const status of ["draft", "active", "archived"] as const)
      expect(parseGateStatus(legacyGateStatus(status))).toBe(status);
  });

  it("lets only an active gate accept requests", () => {
    expect([acceptsRequests("draft"), acceptsRequests("active"), acceptsRequests("archived")]).toEqual([
      false,
      true,
      false,
    ]);
  });
});
