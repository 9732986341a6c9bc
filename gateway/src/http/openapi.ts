import { idempotencyHeader } from "../idempotency/idempotency-key.ts";
import { replayedHeader } from "../idempotency/idempotency-stage.ts";
import { flowSecretForm, qrCodePrefix, qrCodeSuffix, requestIdForm } from "../operations/gate-links.ts";
import { jwksPath } from "../operations/jwks.ts";
import { widgetScriptPaths } from "../operations/widget-script.ts";
import { developmentInFlight, tiers } from "../rate-limits/rate-tiers.ts";
import type { AliasRow } from "../rename-window/aliases.ts";
import { corsAllowedHeaders, corsExposedHeaders, preflightMaxAgeSeconds, servesBrowsers } from "./cors.ts";
import type { CredentialKindName } from "./credential.ts";
import { jsonReply, type RawRoute } from "./raw-route.ts";
import { basePath, type Route } from "./route.ts";
import { type ObjectSchema, type Schema, uuidV4Pattern } from "./schema.ts";

/**
 * The OpenAPI 3.1 description of the public API, generated from the route table, the same schemas
 * `validate` checks, the alias table and the tier table, so the document cannot drift from what the
 * gateway does. Served at `{base_url}/openapi.json`.
 */

type Json = Record<string, unknown>;

export const openApiPath = "/openapi.json";

/** `GET {base_url}/openapi.json`: the document, generated once at start. */
export const openApiRoute = (document: Json): RawRoute => ({
  path: `${basePath}${openApiPath}`,
  method: "GET",
  serve: () => jsonReply(200, document),
});

export interface OpenApiOptions {
  routes: readonly Route[];
  aliases: readonly AliasRow[];
  sunset: Date;
  /** `{api_origin}`; `{base_url}` is it plus `/v1`. */
  publicOrigin: string;
}

/** Our schema subset as JSON Schema 2020-12 (OpenAPI 3.1): `nullable` becomes a type union, `uuid-v4` a uuid with its pattern. */
export function jsonSchemaOf(schema: Schema): Json {
  const out: Json = {};
  const type = schema.nullable ? [schema.type, "null"] : schema.type;
  out.type = type;
  if (schema.description !== undefined) out.description = schema.description;
  if (schema.deprecated) out.deprecated = true;
  switch (schema.type) {
    case "string":
      if (schema.minLength !== undefined) out.minLength = schema.minLength;
      if (schema.maxLength !== undefined) out.maxLength = schema.maxLength;
      if (schema.format === "uuid-v4") Object.assign(out, { format: "uuid", pattern: uuidV4Pattern.source });
      else if (schema.format !== undefined) out.format = schema.format;
      if (schema.pattern !== undefined) out.pattern = schema.pattern;
      if (schema.enum) out.enum = schema.nullable ? [...schema.enum, null] : [...schema.enum];
      if (schema.default !== undefined) out.default = schema.default;
      break;
    case "integer":
    case "number":
      if (schema.minimum !== undefined) out.minimum = schema.minimum;
      if (schema.maximum !== undefined) out.maximum = schema.maximum;
      if (schema.default !== undefined) out.default = schema.default;
      break;
    case "boolean":
      if (schema.default !== undefined) out.default = schema.default;
      break;
    case "array":
      out.items = jsonSchemaOf(schema.items);
      if (schema.minItems !== undefined) out.minItems = schema.minItems;
      if (schema.maxItems !== undefined) out.maxItems = schema.maxItems;
      break;
    case "object":
      if (schema.properties)
        out.properties = Object.fromEntries(
          Object.entries(schema.properties).map(([name, p]) => [name, jsonSchemaOf(p)]),
        );
      if (schema.required && schema.required.length > 0) out.required = [...schema.required];
      if (schema.additionalProperties) out.additionalProperties = true;
      break;
  }
  return out;
}

const until = (sunset: Date) => sunset.toISOString().slice(0, 10);

/** Adds the old names of a request's fields, deprecated; a required field may come under either name. */
function withRequestAliases(schema: Json, rows: readonly AliasRow[], sunset: Date): Json {
  const properties = { ...(schema.properties as Record<string, Json> | undefined) };
  let required = [...((schema.required as string[] | undefined) ?? [])];
  const anyOf: Json[] = [];
  for (const row of rows) {
    const current = properties[row.new];
    if (!current) continue;
    if (row.values) {
      const oldValues = row.values.filter((v) => v.old !== v.new);
      const accepted = Array.isArray(current.enum)
        ? { enum: [...(current.enum as unknown[]), ...new Set(oldValues.map((v) => v.old))] }
        : {};
      properties[row.new] = {
        ...current,
        ...accepted,
        description:
          `${current.description ?? ""} Old values are read as new ones until ${until(sunset)}: ${oldValues.map((v) => `${v.old} → ${v.new}`).join(", ")}.`.trim(),
      };
    }
    if (row.old !== row.new) {
      properties[row.old] = {
        ...current,
        deprecated: true,
        description: `Old name of \`${row.new}\`, accepted until ${until(sunset)}; \`${row.new}\` wins when both are sent.`,
      };
      if (required.includes(row.new)) {
        required = required.filter((name) => name !== row.new);
        anyOf.push({ required: [row.new] }, { required: [row.old] });
      }
    }
  }
  const out: Json = { ...schema, properties };
  if (required.length > 0) out.required = required;
  else delete out.required;
  if (anyOf.length > 0) out.anyOf = anyOf;
  return out;
}

/** Adds the old names a result carries during the window, deprecated. */
function withResultAliases(schema: Json, rows: readonly AliasRow[], sunset: Date): Json {
  if (rows.length === 0) return schema;
  const properties = { ...(schema.properties as Record<string, Json> | undefined) };
  for (const row of rows) {
    const description = row.values
      ? `The old value of \`${row.new}\` (${row.values.map((v) => `${v.new} → ${v.old}`).join(", ")}), until ${until(sunset)}.`
      : `Same value as \`${row.new}\`, under its old name, until ${until(sunset)}.`;
    properties[row.old] = { type: "string", deprecated: true, description };
  }
  return { ...schema, properties };
}

const securitySchemeOf: Record<CredentialKindName, string> = {
  secret_key: "secretKey",
  site_key: "siteKey",
  grant_token: "grantToken",
  agent_key: "agentKey",
  user_session: "userSession",
};

const securitySchemes: Record<string, Json> = {
  secretKey: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "svc_dev_… or svc_production_… (also svc_prod_…)",
    description: "Secret API key, for server calls.",
  },
  siteKey: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "pk_test_… or pk_live_…",
    description:
      "Site key, for browser calls: the request must send an allowed `Origin`. Its answers carry `Access-Control-Allow-Origin` (that origin) only then; a refused key or origin gets its `data.error` without it, so the page's script cannot read it (a network error) while the key's owner sees it in the browser's developer tools.",
  },
  grantToken: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "svcs_…",
    description: "Single-use grant token from create-session; lives 5 minutes.",
  },
  agentKey: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "svc_agent_<Name>__<secret>",
    description: "Agent key, scoped to one agent and one environment.",
  },
  userSession: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description: "Signed-in user session of the mobile app (identity-provider JWT).",
  },
};

const idempotencyDescription = [
  "Makes a retry safe: the same key with the same request (method, path and the input as validated) answers the first final answer again, result or `data.error`, for 24 hours, without running the operation (the request still counts against rate limits).",
  "The same key with another request is `data.error` 409 `idempotency_key_reused`; while the first request runs, 409 `idempotency_key_in_use`.",
  'A `data.error` 500 or 502 ("retry"), a 400 and an HTTP 500 are not stored: the retry runs the operation again, and create-verification-link then answers the request its lost first call created.',
  "Keys are scoped to the credential (API key, agent key, user session, grant token); verify-token's to the token, the web flow's to its flow secret.",
].join(" ");

const ref = (kind: string, name: string) => ({ $ref: `#/components/${kind}/${name}` });

const bucketReport: Json = {
  type: "object",
  required: ["limit", "remaining", "resetIn"],
  properties: {
    limit: { type: "integer" },
    remaining: { type: "integer" },
    resetIn: { type: "integer", description: "seconds until the window resets" },
  },
};

function components(sunset: Date): Json {
  const tierRows = Object.values(tiers)
    .map(
      (tier) =>
        `\`${tier.scope}\`: ${tier.buckets.map((b) => `${b.name} ${b.limit}/${b.windowSeconds} s${b.perClientIp ? " per client IP" : ""}`).join(", ")}${tier.inFlight ? `, in_flight ${tier.inFlight}` : ""}`,
    )
    .join("; ");
  return {
    securitySchemes,
    schemas: {
      EnvelopeError: {
        type: "object",
        description:
          "An operation that ran and refused (HTTP 200). Branch on `statusCode`. Authentication refusals carry only `statusCode` and `message`, except where an operation's error table names a code (secured-accounts list: `api_key_required`, `invalid_api_key`). Every POST may answer 409 `idempotency_key_reused` (the key was first used with another request) or 409 `idempotency_key_in_use` (its first request is still running; retry later).",
        required: ["statusCode", "message"],
        properties: {
          statusCode: { type: "integer", enum: [400, 401, 403, 404, 409, 410, 422, 429, 500, 502] },
          message: { type: "string" },
          code: { type: "string" },
        },
        additionalProperties: true,
      },
      RateLimit: {
        type: "object",
        description: `Beside \`data\` (or \`errors\`): always for API keys and grant tokens, for live site keys only with \`x-svc-include-ratelimit: true\`, always on a block. Tiers: ${tierRows}. Windows are fixed and aligned to the clock (a minute resets on the minute, a day at 00:00 UTC). The development \`burst\` bucket is named per_minute (30 per 10 s).`,
        required: ["scope", "primary", "buckets"],
        properties: {
          scope: { type: "string", description: "bs_test, bs_prod, pk_test, pk_live, bss_test, bss_prod, app or ip" },
          primary: {
            ...bucketReport,
            required: ["bucket", "limit", "remaining", "resetIn"],
            properties: { bucket: { type: "string" }, ...(bucketReport.properties as Json) },
          },
          buckets: { type: "object", additionalProperties: bucketReport },
        },
      },
      Deprecation: {
        type: "object",
        description: `Beside the result when the request used an old name alone (until ${until(sunset)}).`,
        required: ["used", "sunset", "link"],
        properties: {
          used: {
            type: "array",
            items: {
              type: "object",
              required: ["old", "new"],
              properties: { old: { type: "string" }, new: { type: "string" } },
            },
          },
          sunset: { type: "string", format: "date-time" },
          link: { type: "string", format: "uri" },
        },
      },
      InputValidationError: {
        type: "object",
        required: ["code", "message", "input", "errors"],
        properties: {
          code: { const: "InputValidationError" },
          message: { type: "string" },
          input: { type: "object", description: "the input as received" },
          errors: {
            type: "array",
            items: {
              type: "object",
              required: ["propertyPath", "invalidValue", "message"],
              properties: { propertyPath: { type: "string" }, invalidValue: {}, message: { type: "string" } },
            },
          },
          _rateLimit: ref("schemas", "RateLimit"),
          _deprecation: ref("schemas", "Deprecation"),
        },
      },
      RateLimited: {
        type: "object",
        description: `A request refused by a rate limit ran nothing. On a development API key \`data.error\` says the same with statusCode 429 (reason \`rate\` or \`concurrent\`, in_flight cap ${developmentInFlight}).`,
        required: ["errors", "_rateLimit"],
        properties: {
          errors: {
            type: "array",
            items: {
              type: "object",
              required: ["message", "code"],
              properties: { message: { type: "string" }, code: { const: "RATE_LIMITED" } },
            },
          },
          _rateLimit: ref("schemas", "RateLimit"),
          data: {
            type: "object",
            properties: {
              error: {
                type: "object",
                required: ["statusCode", "message", "code", "reason", "bucket", "retry_in", "limits", "upgrade_url"],
                properties: {
                  statusCode: { const: 429 },
                  message: { type: "string" },
                  code: { const: "RATE_LIMITED" },
                  reason: { enum: ["rate", "concurrent"] },
                  bucket: { enum: ["per_minute", "hourly", "daily", "in_flight"] },
                  retry_in: { type: "integer" },
                  limits: {
                    type: "object",
                    additionalProperties: {
                      type: "object",
                      properties: { limit: { type: "integer" }, window_seconds: { type: "integer" } },
                    },
                  },
                  upgrade_url: { type: "string", format: "uri" },
                },
              },
            },
          },
        },
      },
    },
    headers: {
      RateLimitPolicy: {
        description:
          'Quota policies of the credential\'s tier (draft-ietf-httpapi-ratelimit-headers), one per windowed bucket: `"per_minute";q=60;w=60, …`.',
        schema: { type: "string" },
      },
      RateLimit: {
        description: 'What is left of each policy: `"per_minute";r=59;t=42, …` (r remaining, t seconds to reset).',
        schema: { type: "string" },
      },
      Deprecation: {
        description: "`true` when the request used an old name alone.",
        schema: { type: "string", enum: ["true"] },
      },
      Sunset: { description: "When old names stop working (HTTP-date).", schema: { type: "string" } },
      Link: { description: 'Where the rename is described, `rel="deprecation"`.', schema: { type: "string" } },
      IdempotentReplayed: {
        description: `\`true\` when the answer is the stored first answer of the request's \`${idempotencyHeader}\`, not a new run.`,
        schema: { type: "string", enum: ["true"] },
      },
      AccessControlAllowOrigin: {
        description:
          "The page's `Origin`, when a site key authenticated from one of its allowed origins, or a grant token authenticated (the page got it from create-session; also on a 400 or 403 after authentication).",
        schema: { type: "string" },
      },
      AccessControlExposeHeaders: {
        description: "Headers a page's script may read.",
        schema: { type: "string", const: corsExposedHeaders.join(", ") },
      },
      VaryOrigin: { description: "The answer depends on `Origin`.", schema: { type: "string", const: "Origin" } },
    },
    parameters: {
      IdempotencyKey: {
        name: idempotencyHeader,
        in: "header",
        required: false,
        description: idempotencyDescription,
        schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x20-\\x7e]+$" },
      },
    },
    responses: {
      InputValidationError: {
        description: "The input failed validation before the operation ran.",
        content: { "application/json": { schema: ref("schemas", "InputValidationError") } },
      },
      RateLimited: {
        description: "Rate limit exceeded. Retry after `_rateLimit.primary.resetIn` seconds.",
        headers: { "RateLimit-Policy": ref("headers", "RateLimitPolicy"), RateLimit: ref("headers", "RateLimit") },
        content: { "application/json": { schema: ref("schemas", "RateLimited") } },
      },
      Unhandled: {
        description: "Unhandled failure; retry with backoff.",
        content: { "application/json": { schema: { type: "object", properties: { message: { type: "string" } } } } },
      },
    },
  };
}

const browserHeaders = {
  "Access-Control-Allow-Origin": ref("headers", "AccessControlAllowOrigin"),
  "Access-Control-Expose-Headers": ref("headers", "AccessControlExposeHeaders"),
  Vary: ref("headers", "VaryOrigin"),
};

/** The CORS preflight of a path whose operations take a site key or a grant token. */
function preflightOf(routes: readonly Route[]): Json {
  const methods = routes.map((route) => route.method).join(", ");
  const constant = (value: string) => ({ schema: { type: "string", const: value } });
  const [first] = routes;
  if (!first) throw new Error("a preflight is described for the routes of a path, and there are none");
  return {
    operationId: `${first.operationId}Preflight`,
    summary: "CORS preflight of a browser call with a site key or a grant token.",
    description:
      "Answered for any `Origin`: a preflight carries no credential, so the actual request is judged by its credential. It is not rate-limited.",
    security: [],
    responses: {
      "204": {
        description: "The call may be tried from this origin.",
        headers: {
          "Access-Control-Allow-Origin": { description: "The request's `Origin`.", schema: { type: "string" } },
          "Access-Control-Allow-Methods": constant(methods),
          "Access-Control-Allow-Headers": constant(corsAllowedHeaders.join(", ")),
          "Access-Control-Max-Age": constant(String(preflightMaxAgeSeconds)),
          Vary: ref("headers", "VaryOrigin"),
        },
      },
    },
  };
}

/** `qr_code_url`: an image, outside the envelope. */
const qrCodeItem: Json = {
  get: {
    operationId: "qrCode",
    summary: "The request's `deep_link` as a QR code (the image at `qr_code_url`).",
    security: [],
    parameters: [
      {
        name: "request_id",
        in: "path",
        required: true,
        schema: { type: "string", pattern: requestIdForm.source },
        example: "req_0123456789abcdef0123456789abcdef",
      },
      {
        name: "t",
        in: "query",
        required: true,
        description: "The request's flow secret, as in `deep_link`: the address is as secret as the deep link.",
        schema: { type: "string", pattern: flowSecretForm.source },
        example: "Gq3rT8vXk2LmN5pQ7sW9yZb4Cd6Fh1Jn",
      },
    ],
    responses: {
      "200": {
        description: "An SVG image, drawn from the address alone; not rate-limited.",
        headers: { "Cache-Control": { schema: { type: "string", const: "no-store" } } },
        content: { "image/svg+xml": { schema: { type: "string" } } },
      },
      "404": {
        description: "Not an address of the form `qr_code_url` has.",
        content: {
          "application/json": {
            schema: { type: "object", properties: { error: { const: "not_found" }, message: { type: "string" } } },
          },
        },
      },
    },
  },
};

/** The refusals of a missing required field (`gate_required`), which come as `data.error` rather than a 400. */
const missingRefusals = (route: Route): string =>
  Object.entries(route.refuseMissing ?? {})
    .map(
      ([field, refusal]) =>
        ` Without \`${field}\` (under any of its names): \`data.error\` \`{statusCode: 400, code: "${refusal.code}"}\`, message "${refusal.message}".`,
    )
    .join("");

function operationOf(route: Route, aliases: readonly AliasRow[], sunset: Date): Json {
  const rows = aliases.filter((row) => row.operationId === route.operationId);
  const input = withRequestAliases(
    jsonSchemaOf(route.input as ObjectSchema),
    rows.filter((row) => row.in !== "result"),
    sunset,
  );
  const result = withResultAliases(
    route.output ? jsonSchemaOf(route.output) : { type: "object", description: "not described" },
    rows.filter((row) => row.in === "result"),
    sunset,
  );
  const answered =
    route.envelope === "nested" ? { type: "object", required: ["data"], properties: { data: result } } : result;
  const operation: Json = {
    operationId: route.operationId,
    summary: route.summary,
    security: route.auth.accepts.map((kind) => ({ [securitySchemeOf[kind]]: [] })),
    responses: {
      "200": {
        description: `Answered: the result in ${route.envelope === "nested" ? "`data.data`" : "`data`"}, or a refusal in \`data.error\`; check \`data.error\` first.${missingRefusals(route)}`,
        headers: {
          "RateLimit-Policy": ref("headers", "RateLimitPolicy"),
          RateLimit: ref("headers", "RateLimit"),
          ...(route.method === "POST" && { [replayedHeader]: ref("headers", "IdempotentReplayed") }),
          ...(rows.length > 0 && {
            Deprecation: ref("headers", "Deprecation"),
            Sunset: ref("headers", "Sunset"),
            Link: ref("headers", "Link"),
          }),
          ...(servesBrowsers(route) && browserHeaders),
        },
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["data"],
              properties: {
                data: {
                  oneOf: [
                    answered,
                    { type: "object", required: ["error"], properties: { error: ref("schemas", "EnvelopeError") } },
                  ],
                },
                _rateLimit: ref("schemas", "RateLimit"),
                ...(rows.length > 0 && { _deprecation: ref("schemas", "Deprecation") }),
              },
            },
          },
          ...(route.produces === "text/event-stream" && {
            "text/event-stream": {
              schema: {
                type: "string",
                description: `Server-Sent Events once authenticated: each \`data:\` line is one JSON object shaped as this schema's \`x-event-data\`; a refusal comes as application/json instead.`,
                "x-event-data": result,
              },
            },
          }),
        },
      },
      "400": ref("responses", "InputValidationError"),
      ...(route.rateLimit !== "exempt" && { "403": ref("responses", "RateLimited") }),
      "500": ref("responses", "Unhandled"),
    },
  };
  if (route.method === "POST") {
    operation.parameters = [ref("parameters", "IdempotencyKey")];
    operation.requestBody = {
      required: false,
      description: "A JSON object; an empty body is `{}`. Unknown fields are ignored.",
      content: { "application/json": { schema: input } },
    };
  } else {
    const properties = (input.properties ?? {}) as Record<string, Json>;
    const required = (input.required ?? []) as string[];
    operation.parameters = Object.entries(properties).map(([name, schema]) => {
      const { description, deprecated, ...rest } = schema;
      return {
        name,
        in: "query",
        required: required.includes(name),
        schema: rest,
        ...(description !== undefined && { description }),
        ...(deprecated === true && { deprecated: true }),
      };
    });
  }
  return operation;
}

export function openApiDocument(options: OpenApiOptions): Json {
  const paths: Record<string, Json> = {};
  for (const route of options.routes) {
    paths[route.path] = {
      ...paths[route.path],
      [route.method.toLowerCase()]: operationOf(route, options.aliases, options.sunset),
    };
  }
  for (const [path, browserRoutes] of Map.groupBy(options.routes.filter(servesBrowsers), (route) => route.path)) {
    paths[path] = { ...paths[path], options: preflightOf(browserRoutes) };
  }
  paths[`${qrCodePrefix}{request_id}${qrCodeSuffix}`] = qrCodeItem;
  Object.assign(paths, widgetScriptPaths);
  paths[openApiPath] = {
    get: {
      operationId: "openApiDocument",
      summary: "This document.",
      security: [],
      responses: {
        "200": {
          description: "The OpenAPI 3.1 description of the API (not enveloped).",
          content: { "application/json": { schema: { type: "object" } } },
        },
      },
    },
  };
  paths[jwksPath] = {
    servers: [{ url: options.publicOrigin }],
    get: {
      operationId: "keySet",
      summary: "The public key set of attestation tokens and proofs (select the key by the token's `kid`).",
      security: [],
      responses: {
        "200": {
          description: "Plain JSON outside the envelope; `Cache-Control: public, max-age=300`.",
          content: {
            "application/json": {
              schema: {
                type: "object",
                required: ["keys"],
                properties: { keys: { type: "array", items: { type: "object" } } },
              },
            },
          },
        },
        "503": {
          description: "No key set can be built: keep the cached copy and retry.",
          content: {
            "application/json": {
              schema: {
                type: "object",
                properties: { keys: { type: "array", maxItems: 0 }, error: { const: "jwks_unavailable" } },
              },
            },
          },
        },
      },
    },
  };
  return {
    openapi: "3.1.0",
    info: {
      title: "Human-verification and agent-confirmation service",
      version: "2.0.0",
      description: [
        "Every operation answers HTTP 200 with `data`: the result in `data.data` (flat `data` for the operations so marked), a refusal in `data.error`.",
        "Only input validation (400), a rate limit (403 `RATE_LIMITED`) and an unhandled failure (500) use another status.",
        `Every POST takes an \`${idempotencyHeader}\` header for safe retries (see the IdempotencyKey parameter).`,
        "Browsers call with a site key from one of its allowed origins (CORS): those operations answer a preflight, and their answers name the origin and expose the RateLimit and deprecation headers.",
        `Old names (\`scope\`, \`enroll\`, old gate status values) keep working until ${until(options.sunset)}; such a request gets \`Deprecation\`, \`Sunset\` and \`Link\` headers and \`_deprecation\`. From then on an old name alone is refused with \`alias_retired\`.`,
      ].join(" "),
    },
    servers: [{ url: `${options.publicOrigin}/v1` }],
    paths,
    components: components(options.sunset),
  };
}
