/**
 * Input schemas of the public operations, kept as plain data (a subset of JSON Schema / OpenAPI 3.1)
 * so that one declaration both validates requests and, later, generates the OpenAPI document.
 *
 * `format: "uuid-v4"` is our one extension: OpenAPI formats are open-ended; the document generator
 * renders it as `format: uuid` plus the version-4 pattern.
 */

type StringFormat = "uuid" | "uuid-v4" | "date-time" | "email" | "uri";

interface Common {
  description?: string;
  /** `null` is accepted besides the declared type. */
  nullable?: boolean;
  deprecated?: boolean;
}

interface StringSchema extends Common {
  type: "string";
  minLength?: number;
  maxLength?: number;
  /**
   * The service that owns `maxLength` and checks it: the gateway documents the limit but does not check
   * it, and the route answers the service's refusal as this 400 would be (with {@link tooLongIssue}).
   */
  maxLengthOwner?: "agentlink";
  /** A regular expression (ECMAScript syntax, as in JSON Schema), tested unanchored. */
  pattern?: string;
  enum?: readonly string[];
  format?: StringFormat;
  default?: string;
}

interface NumberSchema extends Common {
  type: "integer" | "number";
  minimum?: number;
  maximum?: number;
  default?: number;
}

interface BooleanSchema extends Common {
  type: "boolean";
  default?: boolean;
}

interface ArraySchema extends Common {
  type: "array";
  items: Schema;
  minItems?: number;
  maxItems?: number;
}

export interface ObjectSchema extends Common {
  type: "object";
  properties?: Readonly<Record<string, Schema>>;
  required?: readonly string[];
  /** Keep properties that are not declared (a free-form object such as `metadata`); dropped otherwise. */
  additionalProperties?: boolean;
}

export type Schema = StringSchema | NumberSchema | BooleanSchema | ArraySchema | ObjectSchema;

/** The TypeScript type of a value that passed `validate(schema)`. */
export type Infer<S> = S extends { nullable: true } ? InferType<S> | null : InferType<S>;

type InferType<S> = S extends { type: "string"; enum: readonly (infer E)[] }
  ? E
  : S extends { type: "string" }
    ? string
    : S extends { type: "integer" | "number" }
      ? number
      : S extends { type: "boolean" }
        ? boolean
        : S extends { type: "array"; items: infer I }
          ? Infer<I>[]
          : S extends { type: "object"; properties: infer P }
            ? InferObject<P, S extends { required: readonly (infer R)[] } ? R : never> &
                (S extends { additionalProperties: true } ? Record<string, unknown> : unknown)
            : S extends { type: "object" }
              ? Record<string, unknown>
              : unknown;

type Present<P, K extends keyof P, R> = K extends R ? true : P[K] extends { default: unknown } ? true : false;

type InferObject<P, R> = Simplify<
  { [K in keyof P as Present<P, K, R> extends true ? K : never]: Infer<P[K]> } & {
    [K in keyof P as Present<P, K, R> extends true ? never : K]?: Infer<P[K]>;
  }
>;

type Simplify<T> = { [K in keyof T]: T[K] } & {};

export interface ValidationIssue {
  /** Dotted path of the property (`action.summary_title`, `decisions[0].card_id`); "" is the whole input. */
  propertyPath: string;
  invalidValue: unknown;
  message: string;
}

export type ValidationResult<T> = { ok: true; value: T } | { ok: false; errors: ValidationIssue[] };

export interface ValidateOptions {
  /**
   * Query parameters arrive as text: integers, numbers and booleans are read from their text form,
   * and a parameter given more than once arrives as an array (accepted only where the schema has one).
   */
  fromQuery?: boolean;
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const uuidV4Pattern = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
const emailPattern = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const dateTimePattern = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

const formatChecks: Record<StringFormat, { test: (v: string) => boolean; message: string }> = {
  uuid: { test: (v) => uuidPattern.test(v), message: "must be a UUID" },
  "uuid-v4": { test: (v) => uuidV4Pattern.test(v), message: "must be a version 4 UUID" },
  email: { test: (v) => emailPattern.test(v), message: "must be an e-mail address" },
  "date-time": {
    test: (v) => dateTimePattern.test(v) && !Number.isNaN(Date.parse(v)),
    message: "must be an ISO 8601 date-time",
  },
  uri: {
    test: (v) => {
      try {
        new URL(v);
        return true;
      } catch {
        return false;
      }
    },
    message: "must be an absolute URL",
  },
};

/** Compiled patterns, so a schema's pattern is parsed once however often it is used. */
const patterns = new Map<string, RegExp>();
const compiled = (pattern: string): RegExp => {
  let re = patterns.get(pattern);
  if (!re) {
    re = new RegExp(pattern, "u");
    patterns.set(pattern, re);
  }
  return re;
};

const describeType = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
/** A text over its `maxLength`, as validation reports it and a route reports its owner's refusal. */
export const tooLongIssue = (path: string, value: string, maxLength: number): ValidationIssue => ({
  propertyPath: path,
  invalidValue: value,
  message: `${label(path)} must be at most ${maxLength} characters long`,
});

const child = (path: string, key: string) => (path === "" ? key : `${path}.${key}`);
const label = (path: string) => (path === "" ? "input" : path);

/**
 * Checks `value` against `schema` and returns the cleaned value: declared properties only (unless the
 * object allows more), defaults filled in, query text converted. Every problem is reported, not only the first.
 */
export function validate<S extends Schema>(
  schema: S,
  value: unknown,
  options: ValidateOptions = {},
): ValidationResult<Infer<S>> {
  const errors: ValidationIssue[] = [];
  const out = check(schema, value, "", errors, options.fromQuery === true);
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value: out as Infer<S> };
}

/**
 * A string's length as the schema counts it, in code points (an emoji is one character), as `[...text].length`
 * counts, without making an array of every character of each string checked (a token is hundreds).
 */
function codePoints(text: string): number {
  let count = text.length;
  for (let i = 0; i < text.length - 1; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        count--;
        i++;
      }
    }
  }
  return count;
}

function check(schema: Schema, value: unknown, path: string, errors: ValidationIssue[], fromQuery: boolean): unknown {
  const fail = (message: string): undefined => {
    errors.push({ propertyPath: path, invalidValue: value ?? null, message: `${label(path)} ${message}` });
    return undefined;
  };
  if (value === null) return schema.nullable ? null : fail(`must be ${article(schema.type)}, not null`);
  if (fromQuery && schema.type !== "array" && Array.isArray(value)) return fail("must be given once");

  switch (schema.type) {
    case "string": {
      if (typeof value !== "string") return fail(`must be a string, not ${describeType(value)}`);
      if (!isStorableText(value)) return fail(unstorableMessage);
      const length = codePoints(value);
      if (schema.minLength !== undefined && length < schema.minLength)
        return fail(
          schema.minLength === 1 ? "must not be empty" : `must be at least ${schema.minLength} characters long`,
        );
      if (schema.maxLength !== undefined && schema.maxLengthOwner === undefined && length > schema.maxLength) {
        errors.push(tooLongIssue(path, value, schema.maxLength));
        return undefined;
      }
      if (schema.enum && !schema.enum.includes(value)) return fail(`must be one of: ${schema.enum.join(", ")}`);
      if (schema.format && !formatChecks[schema.format].test(value)) return fail(formatChecks[schema.format].message);
      if (schema.pattern !== undefined && !compiled(schema.pattern).test(value))
        return fail(`must match the pattern ${schema.pattern}`);
      return value;
    }
    case "integer":
    case "number": {
      let n = value;
      if (fromQuery && typeof value === "string" && /^-?\d+(\.\d+)?$/.test(value.trim())) n = Number(value);
      if (typeof n !== "number" || !Number.isFinite(n))
        return fail(`must be ${article(schema.type)}, not ${describeType(value)}`);
      if (schema.type === "integer" && !Number.isInteger(n)) return fail("must be an integer");
      if (schema.minimum !== undefined && n < schema.minimum) return fail(`must be at least ${schema.minimum}`);
      if (schema.maximum !== undefined && n > schema.maximum) return fail(`must be at most ${schema.maximum}`);
      return n;
    }
    case "boolean": {
      let b = value;
      if (fromQuery && (value === "true" || value === "false")) b = value === "true";
      if (typeof b !== "boolean") return fail(`must be a boolean, not ${describeType(value)}`);
      return b;
    }
    case "array": {
      const items = fromQuery && typeof value === "string" ? [value] : value;
      if (!Array.isArray(items)) return fail(`must be an array, not ${describeType(value)}`);
      if (schema.minItems !== undefined && items.length < schema.minItems)
        return fail(`must have at least ${schema.minItems} item${schema.minItems === 1 ? "" : "s"}`);
      if (schema.maxItems !== undefined && items.length > schema.maxItems)
        return fail(`must have at most ${schema.maxItems} items`);
      return items.map((item, i) => check(schema.items, item, `${path}[${i}]`, errors, fromQuery));
    }
    case "object": {
      if (!isPlainObject(value)) return fail(`must be an object, not ${describeType(value)}`);
      const out: Record<string, unknown> = schema.additionalProperties ? { ...value } : {};
      if (schema.additionalProperties) {
        const bad = unstorablePath(value, path, schema.properties ?? {});
        if (bad !== undefined)
          errors.push({ propertyPath: bad, invalidValue: null, message: `${label(bad)} ${unstorableMessage}` });
      }
      const properties = schema.properties ?? {};
      for (const name of schema.required ?? []) {
        if (value[name] === undefined)
          errors.push({
            propertyPath: child(path, name),
            invalidValue: null,
            message: `${child(path, name)} is required`,
          });
      }
      for (const [name, propertySchema] of Object.entries(properties)) {
        const given = value[name];
        if (given === undefined) {
          if ("default" in propertySchema && propertySchema.default !== undefined) out[name] = propertySchema.default;
          continue;
        }
        const checked = check(propertySchema, given, child(path, name), errors, fromQuery);
        if (checked !== undefined) out[name] = checked;
      }
      return out;
    }
  }
}

/**
 * Text no store can keep: NUL (PostgreSQL text and jsonb refuse it) and unpaired surrogates (not
 * Unicode, so not UTF-8). Refused here, as invalid input, rather than failing deep in a service.
 */
const isStorableText = (text: string): boolean => text.isWellFormed() && !text.includes("\u0000");
const unstorableMessage = "must not contain NUL characters or unpaired surrogates";

/** The first place in a free-form value (keys included) holding unstorable text; declared properties are checked by their schemas. */
function unstorablePath(value: unknown, path: string, declared: Readonly<Record<string, Schema>>): string | undefined {
  if (typeof value === "string") return isStorableText(value) ? undefined : path;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const bad = unstorablePath(item, `${path}[${i}]`, {});
      if (bad !== undefined) return bad;
    }
    return undefined;
  }
  if (!isPlainObject(value)) return undefined;
  for (const [key, item] of Object.entries(value)) {
    if (Object.hasOwn(declared, key)) continue;
    const at = child(path, key);
    if (!isStorableText(key)) return at;
    const bad = unstorablePath(item, at, {});
    if (bad !== undefined) return bad;
  }
  return undefined;
}

const article = (type: string) => (/^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`);
