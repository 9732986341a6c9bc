import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

/**
 * Whether an answer is one the OpenAPI document (`GET /v1/openapi.json`) describes, judged by an
 * independent JSON Schema 2020-12 validator (ajv with its formats) rather than by the gateway's own
 * code: the status must be documented for the method and path, the body must match that response's
 * schema (a `oneOf` in exactly one branch), and each documented header the answer carries must match
 * its schema. Any test holding a real answer can call it.
 */

type Json = Record<string, unknown>;

export interface DocumentedAnswer {
  status: number;
  /** The parsed JSON body, or the text of another media type; `undefined` or `""` for no body. */
  body: unknown;
  /** The body is not read (an event stream, the answer to HEAD): only a media type it names is checked. */
  unread?: boolean;
  /** Without one, `application/json` when the body is not empty. */
  contentType?: string;
  headers?: Headers | Record<string, string>;
}

/** Where the document's `#/components/…` references point inside the validator. */
const base = "https://openapi.invalid";

/** A copy of `value` whose `#/components/…` references name the validator's copies of those components. */
function rebased(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rebased);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, v]) => [
      key,
      key === "$ref" && typeof v === "string" && v.startsWith("#/") ? `${base}/${v.slice(2)}` : rebased(v),
    ]),
  );
}

interface Validator {
  ajv: Ajv2020;
  /** By the schema's JSON: the many operations that repeat one inline schema share its validator. */
  compiled: Map<string, ValidateFunction>;
}

const validators = new WeakMap<Json, Validator>();

function validatorOf(document: Json): Validator {
  const known = validators.get(document);
  if (known) return known;
  // Strict about keywords (a misspelt one is an error), not about how a schema spells its types.
  const ajv = new Ajv2020({ strict: true, strictTypes: false, allowUnionTypes: true, allErrors: true });
  // An annotation of the event-stream schemas: the shape of each event's data, not a constraint.
  ajv.addKeyword("x-event-data");
  addFormats.default(ajv);
  const schemas = ((document.components as Json | undefined)?.schemas ?? {}) as Record<string, Json>;
  for (const [name, schema] of Object.entries(schemas))
    ajv.addSchema(rebased(schema) as Json, `${base}/components/schemas/${name}`);
  const validator = { ajv, compiled: new Map<string, ValidateFunction>() };
  validators.set(document, validator);
  return validator;
}

/** The validator of `schema`, a schema of the document, compiled once. */
function validatorFor(document: Json, schema: Json): ValidateFunction {
  const { ajv, compiled } = validatorOf(document);
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (!validate) {
    validate = ajv.compile(rebased(schema) as Json);
    compiled.set(key, validate);
  }
  return validate;
}

/** `value` against `schema`, a schema of the document; the problems, or none. */
function problems(document: Json, schema: Json, value: unknown): string[] {
  const validate = validatorFor(document, schema);
  if (validate(value)) return [];
  return (validate.errors ?? []).map((error) => `${error.instancePath || "(root)"} ${error.message}`);
}

/** The object a `$ref` names, as deep as references go. */
function resolve(document: Json, value: Json): Json {
  const target = value.$ref;
  if (typeof target !== "string") return value;
  const named = target
    .slice(2)
    .split("/")
    .reduce<Json | undefined>((node, part) => node?.[part] as Json | undefined, document);
  if (!named) throw new Error(`the reference ${target} names nothing`);
  return resolve(document, named);
}

/** The path of a server's URL, without its trailing slash: `/v1` for `{base_url}`. */
const serverPath = (servers: unknown) =>
  new URL((servers as { url: string }[] | undefined)?.[0]?.url ?? "/", "http://x").pathname.replace(/\/$/, "");

/** The document's path template that `path` (below the origin, query allowed) is an address of, if any. */
function findTemplate(document: Json, path: string): string | undefined {
  const pathname = new URL(path, "http://x").pathname;
  const paths = document.paths as Record<string, Json>;
  const found = Object.entries(paths).find(([template, item]) => {
    const form = template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+");
    return new RegExp(`^${serverPath(item.servers ?? document.servers)}${form}$`).test(pathname);
  });
  return found?.[0];
}

function templateOf(document: Json, path: string): string {
  const template = findTemplate(document, path);
  if (template === undefined) throw new Error(`the document has no path for ${new URL(path, "http://x").pathname}`);
  return template;
}

/**
 * Whether the document speaks for `path`: an address of one of its paths, or any address below its
 * server (`{base_url}`), where an address it does not list is an undocumented operation.
 */
export function describes(document: Json, path: string): boolean {
  const pathname = new URL(path, "http://x").pathname;
  return findTemplate(document, path) !== undefined || pathname.startsWith(`${serverPath(document.servers)}/`);
}

/** Throws, saying what differs, unless `answer` is what the document says `method path` may answer. */
export function expectDocumented(document: Json, method: string, path: string, answer: DocumentedAnswer): void {
  const template = templateOf(document, path);
  const where = `${method} ${template}`;
  const operation = (document.paths as Record<string, Json>)[template]?.[method.toLowerCase()] as Json | undefined;
  if (!operation) throw new Error(`${where} is not documented`);
  const documented = (operation.responses as Record<string, Json>)[String(answer.status)];
  if (!documented) throw new Error(`${where} does not document HTTP ${answer.status}`);
  const response = resolve(document, documented);
  const found: string[] = [];
  const content = (response.content ?? {}) as Record<string, Json>;
  const types = Object.keys(content);
  if (answer.unread) {
    const contentType = answer.contentType;
    if (contentType !== undefined && !types.some((type) => contentType.startsWith(type)))
      found.push(`${contentType} is not documented (${types.join(", ") || "no body"})`);
  } else if (answer.body === undefined || answer.body === "") {
    if (types.length > 0) found.push(`the body is empty, documented ${types.join(" or ")}`);
  } else {
    const contentType = answer.contentType ?? "application/json";
    const media = types.find((type) => contentType.startsWith(type));
    if (!media) found.push(`${contentType} is not documented (${types.join(", ") || "no body"})`);
    else found.push(...problems(document, content[media]?.schema as Json, answer.body));
  }
  const headers = new Headers(answer.headers);
  for (const [name, header] of Object.entries((response.headers ?? {}) as Record<string, Json>)) {
    const definition = resolve(document, header);
    const value = headers.get(name);
    if (value === null) {
      if (definition.required === true) found.push(`the header ${name} is missing`);
    } else
      found.push(
        ...problems(document, definition.schema as Json, value).map((problem) => `header ${name}: ${problem}`),
      );
  }
  if (found.length > 0) throw new Error(`${where} ${answer.status} is not as documented:\n${found.join("\n")}`);
}

/**
 * Compiles the schema of every answer and header the document lists, so a test's first answer of each
 * operation is judged as fast as any other (compiling them all takes seconds on a busy machine).
 */
export function prepareDocumented(document: Json): void {
  for (const item of Object.values(document.paths as Record<string, Json>))
    for (const operation of Object.values(item)) {
      const responses = (operation as Json | null)?.responses as Record<string, Json> | undefined;
      for (const documented of Object.values(responses ?? {})) {
        const response = resolve(document, documented);
        for (const media of Object.values((response.content ?? {}) as Record<string, Json>))
          if (media.schema) validatorFor(document, media.schema as Json);
        for (const header of Object.values((response.headers ?? {}) as Record<string, Json>)) {
          const schema = resolve(document, header).schema;
          if (schema) validatorFor(document, schema as Json);
        }
      }
    }
}
