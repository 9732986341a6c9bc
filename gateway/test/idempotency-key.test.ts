import { createSecretKey } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { CallerSchema } from "@svc/proto/common/v1/caller_pb.js";
import { describe, expect, test } from "vitest";
import {
  idempotencyScope,
  readIdempotencyKey,
  requestDigest,
  scopedKeyHash,
} from "../src/idempotency/idempotency-key.ts";
import { routes } from "../src/operations/index.ts";

describe("the Idempotency-Key header", () => {
  test("takes 1 to 255 printable ASCII characters and refuses the rest", () => {
    expect(readIdempotencyKey({})).toEqual({ kind: "absent" });
    for (const key of ["a", "x".repeat(255), "order 42 / retry ~!"])
      expect(readIdempotencyKey({ "idempotency-key": key })).toEqual({ kind: "key", key });
    for (const bad of ["", "x".repeat(256), "tab\there", "caf\u00e9"])
      expect(readIdempotencyKey({ "idempotency-key": bad }).kind).toBe("invalid");
  });

  test("one request digests alike in any key order; another method, path or value does not", () => {
    const base = requestDigest("POST", "/sdk/verify-token", { token: "t", audience: "a" });
    expect(requestDigest("POST", "/sdk/verify-token", { audience: "a", token: "t" })).toEqual(base);
    expect(requestDigest("POST", "/sdk/logout", { token: "t", audience: "a" })).not.toEqual(base);
    expect(requestDigest("POST", "/sdk/verify-token", { token: "t", audience: "b" })).not.toEqual(base);
    expect(requestDigest("POST", "/sdk/verify-token", { token: "t", audience: "a", extra: 1 })).not.toEqual(base);
  });

  test("is scoped to the credential, a grant token to its digest, and an operation without one to its secret field", () => {
    const caller = create(CallerSchema, { organizationId: "org", credentialId: "key-1" });
    const credential = { kind: "secret_key" as const, caller, allowedGates: [] };
    const scope = (over: Partial<Parameters<typeof idempotencyScope>[0]>) =>
      idempotencyScope({ credential: undefined, grantToken: undefined, input: {}, scopeField: undefined, ...over });
    expect(scope({ credential })).toBe("secret_key:org:key-1");
    expect(scope({ grantToken: "svcs_abc" })).toMatch(/^grant_token:[A-Za-z0-9_-]{43}$/);
    expect(scope({ input: { token: "jwt" }, scopeField: "token" })).toMatch(/^input:token:/);
    expect(scope({ input: { token: "jwt" }, scopeField: "token" })).not.toBe(
      scope({ input: { token: "other" }, scopeField: "token" }),
    );
    expect(scope({ input: { token: "jwt" } })).toBeUndefined();
    const pepper = createSecretKey(Buffer.alloc(32, 1));
    expect(scopedKeyHash(pepper, "a", "k")).not.toEqual(scopedKeyHash(pepper, "b", "k"));
  });

  test("every public POST operation without a credential names the secret its keys are scoped to", () => {
    const unscoped = routes
      .filter((r) => r.method === "POST" && r.auth.accepts.length === 0 && r.idempotencyScope === undefined)
      .map((r) => r.path);
    expect(unscoped).toEqual([]);
    for (const route of routes.filter((r) => r.idempotencyScope !== undefined))
      expect(Object.keys(route.input.properties ?? {})).toContain(route.idempotencyScope);
  });
});
