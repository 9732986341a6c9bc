import { createSecretKey, randomBytes } from "node:crypto";
import { uuid } from "@svc/platform";
import { describe, expect, it } from "vitest";
import { handleFor } from "../src/links/handle.ts";

const pepper = createSecretKey(randomBytes(32));
const shop = { organizationId: uuid(), environment: "development" as const };

describe("handles", () => {
  it("have the spec's form OP_ and 12 base62 characters, and differ from person to person", () => {
    const handles = Array.from({ length: 2000 }, () => handleFor(pepper, { ...shop, svcUserId: uuid() }));
    for (const handle of handles) expect(handle).toMatch(/^OP_[A-Za-z0-9]{12}$/);
    expect(new Set(handles).size).toBe(handles.length);
  });

  it("use the whole base62 alphabet", () => {
    const seen = new Set(
      Array.from({ length: 2000 }, () => handleFor(pepper, { ...shop, svcUserId: uuid() })).flatMap((handle) => [
        ...handle.slice(3),
      ]),
    );
    expect(seen.size).toBe(62);
  });

  it("are one per person and platform: the same again, another at another platform, environment or key", () => {
    const person = { ...shop, svcUserId: uuid() };
    const handle = handleFor(pepper, person);
    expect(handleFor(pepper, { ...person })).toBe(handle);
    expect(handleFor(pepper, { ...person, organizationId: uuid() })).not.toBe(handle);
    expect(handleFor(pepper, { ...person, environment: "production" })).not.toBe(handle);
    expect(handleFor(createSecretKey(randomBytes(32)), person)).not.toBe(handle);
  });
});
