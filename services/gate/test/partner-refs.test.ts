import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { partnerRefs } from "../src/partner-refs.ts";

describe("partner references at rest", () => {
  const refs = partnerRefs(randomBytes(32));

  it("hash alike within an organization and differently across organizations and keys", () => {
    expect(refs.hash("org-a", "user-1").equals(refs.hash("org-a", "user-1"))).toBe(true);
    expect(refs.hash("org-a", "user-1").equals(refs.hash("org-b", "user-1"))).toBe(false);
    expect(refs.hash("org-a", "user-1").equals(partnerRefs(randomBytes(32)).hash("org-a", "user-1"))).toBe(false);
  });

  it("seal readably only for the request they were sealed for", () => {
    const sealed = refs.seal("req_1", "user-1");
    expect(sealed.includes(Buffer.from("user-1"))).toBe(false);
    expect(refs.open("req_1", sealed)).toBe("user-1");
    expect(() => refs.open("req_2", sealed)).toThrow();
  });
});
