import { describe, expect, test } from "vitest";
import { jsonSchemaOf } from "../src/http/openapi/json-schema.ts";
import { type Infer, type ObjectSchema, validate } from "../src/http/schema.ts";

const inquire = {
  type: "object",
  properties: {
    request_id: { type: "string", format: "uuid-v4" },
    action: {
      type: "object",
      properties: {
        summary_title: { type: "string", minLength: 1, maxLength: 120 },
        summary_detail: {
          type: "object",
          properties: {
            label: { type: "string", minLength: 1, maxLength: 40 },
            value: { type: "string", minLength: 1, maxLength: 80 },
          },
          required: ["label", "value"],
        },
      },
      required: ["summary_title"],
    },
    decisions: {
      type: "array",
      minItems: 1,
      maxItems: 2,
      items: {
        type: "object",
        properties: { verdict: { type: "string", enum: ["approve", "denied"] } },
        required: ["verdict"],
      },
    },
    ttl_seconds: { type: "integer", minimum: 60, maximum: 86400, default: 600 },
    metadata: { type: "object", additionalProperties: true },
    note: { type: "string", nullable: true, pattern: "^[a-z]+$" },
  },
  required: ["request_id", "action"],
} as const satisfies ObjectSchema;

const validInput = { request_id: "0b6f7a52-3a3c-4c1e-9d7e-2f1f5b0c9a11", action: { summary_title: "Pay 10 EUR" } };

describe("validate", () => {
  test("returns declared fields only, with defaults filled in", () => {
    const result = validate(inquire, { ...validInput, extra: "dropped", metadata: { any: ["thing"] } });
    expect(result).toEqual({ ok: true, value: { ...validInput, ttl_seconds: 600, metadata: { any: ["thing"] } } });
    if (result.ok) {
      const typed: Infer<typeof inquire> = result.value;
      expect(typed.ttl_seconds).toBe(600);
    }
  });

  test("reports a missing required property with its path and a null invalid value", () => {
    const result = validate(inquire, { action: {} });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors).toEqual([
      { propertyPath: "request_id", invalidValue: null, message: "request_id is required" },
      { propertyPath: "action.summary_title", invalidValue: null, message: "action.summary_title is required" },
    ]);
  });

  test("reports every problem, with dotted and indexed paths", () => {
    const result = validate(inquire, {
      request_id: "0b6f7a52-3a3c-1c1e-9d7e-2f1f5b0c9a11",
      action: { summary_title: "x".repeat(121), summary_detail: { label: "", value: 3 } },
      decisions: [{ verdict: "approve" }, { verdict: "maybe" }],
      ttl_seconds: 59.5,
      note: "ABC",
    });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors.map((e) => [e.propertyPath, e.message])).toEqual([
      ["request_id", "request_id must be a version 4 UUID"],
      ["action.summary_title", "action.summary_title must be at most 120 characters long"],
      ["action.summary_detail.label", "action.summary_detail.label must not be empty"],
      ["action.summary_detail.value", "action.summary_detail.value must be a string, not number"],
      ["decisions[1].verdict", "decisions[1].verdict must be one of: approve, denied"],
      ["ttl_seconds", "ttl_seconds must be an integer"],
      ["note", "note must match the pattern ^[a-z]+$"],
    ]);
    expect(result.errors[1]!.invalidValue).toBe("x".repeat(121));
    expect(result.errors[3]!.invalidValue).toBe(3);
  });

  test("accepts null only where the schema says nullable", () => {
    expect(validate(inquire, { ...validInput, note: null }).ok).toBe(true);
    const result = validate(inquire, { ...validInput, ttl_seconds: null });
    expect(result.ok ? [] : result.errors).toEqual([
      { propertyPath: "ttl_seconds", invalidValue: null, message: "ttl_seconds must be an integer, not null" },
    ]);
  });

  test("checks array sizes", () => {
    const result = validate(inquire, { ...validInput, decisions: [] });
    expect(result.ok ? [] : result.errors.map((e) => e.message)).toEqual(["decisions must have at least 1 item"]);
  });

  test("a root that is no object is reported at the empty path", () => {
    const result = validate(inquire, ["not", "an", "object"]);
    expect(result.ok ? [] : result.errors).toEqual([
      { propertyPath: "", invalidValue: ["not", "an", "object"], message: "input must be an object, not array" },
    ]);
  });

  test("counts characters, not UTF-16 units, for lengths", () => {
    const schema = {
      type: "object",
      properties: { name: { type: "string", maxLength: 2 } },
    } as const satisfies ObjectSchema;
    expect(validate(schema, { name: "😀😀" }).ok).toBe(true);
    expect(validate(schema, { name: "😀😀😀" }).ok).toBe(false);
    const mixed = {
      type: "object",
      properties: { name: { type: "string", minLength: 3, maxLength: 3 } },
    } as const satisfies ObjectSchema;
    expect(validate(mixed, { name: "a😀b" }).ok).toBe(true);
    expect(validate(mixed, { name: "😀😀" }).ok).toBe(false);
    expect(validate(mixed, { name: "a😀b😀" }).ok).toBe(false);
  });

  test("leaves a maxLength another service owns to that service, and still checks the rest of the string", () => {
    const schema = {
      type: "object",
      properties: { title: { type: "string", minLength: 1, maxLength: 3, maxLengthOwner: "agentlink" } },
    } as const satisfies ObjectSchema;
    expect(validate(schema, { title: "four" })).toEqual({ ok: true, value: { title: "four" } });
    expect(validate(schema, { title: "" }).ok).toBe(false);
    expect(validate(schema, { title: "x\uD800" }).ok).toBe(false);
    expect(jsonSchemaOf(schema.properties.title)).toEqual({ type: "string", minLength: 1, maxLength: 3 });
  });

  describe("query parameters", () => {
    const list = {
      type: "object",
      properties: {
        limit: { type: "integer", minimum: 1, maximum: 100, default: 25 },
        active: { type: "boolean" },
        status: { type: "string", enum: ["active", "unlinked"] },
        tag: { type: "array", items: { type: "string" } },
      },
    } as const satisfies ObjectSchema;

    test("reads numbers and booleans from text", () => {
      expect(validate(list, { limit: "10", active: "true", tag: "a" }, { fromQuery: true })).toEqual({
        ok: true,
        value: { limit: 10, active: true, tag: ["a"] },
      });
    });

    test("refuses text that is no number, and a scalar given twice", () => {
      const result = validate(list, { limit: "ten", status: ["active", "unlinked"] }, { fromQuery: true });
      expect(result.ok ? [] : result.errors.map((e) => [e.propertyPath, e.message])).toEqual([
        ["limit", "limit must be an integer, not string"],
        ["status", "status must be given once"],
      ]);
    });

    test("does not convert text outside query parameters", () => {
      expect(validate(list, { limit: "10" }).ok).toBe(false);
    });
  });
});
