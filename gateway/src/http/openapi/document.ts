import { jsonReply, type RawRoute } from "../raw-route.ts";
import { basePath, type Route } from "../route.ts";
import { envelopeComponents, envelopeOverview, requestNotReadResponses } from "./envelope-components.ts";
import { operationOf, type SecuritySchemes } from "./operation.ts";
import type { Components, Json, OpenApiPart } from "./part.ts";

/**
 * The OpenAPI 3.1 description of the public API, generated from the route table, the same schemas
 * `validate` checks, and the parts the gateway's features describe themselves by, so the document
 * cannot drift from what the gateway does. Served at `{base_url}/openapi.json`.
 */

export const openApiPath = "/openapi.json";

/** `GET {base_url}/openapi.json`: the document, generated once at start. */
export const openApiRoute = (document: Json): RawRoute => ({
  path: `${basePath}${openApiPath}`,
  method: "GET",
  serve: () => jsonReply(200, document),
});

export interface OpenApiOptions {
  routes: readonly Route[];
  /** The features' parts; their words appear in this order. */
  parts: readonly OpenApiPart[];
  securitySchemes: SecuritySchemes;
  /** The path items of replies outside the envelope (key set, QR code, widget), each written beside its route. */
  paths: Record<string, Json>;
  /** `{api_origin}`; `{base_url}` is it plus `/v1`. */
  publicOrigin: string;
}

const openApiItem: Json = {
  get: {
    operationId: "openApiDocument",
    summary: "This document.",
    security: [],
    responses: {
      "200": {
        description: "The OpenAPI 3.1 description of the API (not enveloped).",
        content: { "application/json": { schema: { type: "object" } } },
      },
      ...requestNotReadResponses,
    },
  },
};

/** Components of every source merged by kind; a name given twice is a mistake. */
function mergeComponents(all: readonly Components[]): Components {
  const merged: Record<string, Record<string, Json>> = {};
  for (const components of all)
    for (const [kind, named] of Object.entries(components)) {
      for (const name of Object.keys(named ?? {}))
        if (merged[kind]?.[name]) throw new Error(`the component ${kind}/${name} is described twice`);
      merged[kind] = { ...merged[kind], ...named };
    }
  return merged;
}

export function openApiDocument(options: OpenApiOptions): Json {
  const { routes, parts } = options;
  const paths: Record<string, Json> = {};
  const add = (path: string, item: Json) => {
    paths[path] = { ...paths[path], ...item };
  };
  for (const route of routes)
    add(route.path, { [route.method.toLowerCase()]: operationOf(route, parts, options.securitySchemes) });
  for (const part of parts) for (const [path, item] of Object.entries(part.paths?.(routes) ?? {})) add(path, item);
  for (const [path, item] of Object.entries(options.paths)) add(path, item);
  add(openApiPath, openApiItem);
  const securitySchemes = Object.fromEntries(
    Object.values(options.securitySchemes).map(({ name, scheme }) => [name, scheme]),
  );
  return {
    openapi: "3.1.0",
    info: {
      title: "Human-verification and agent-confirmation service",
      version: "2.0.0",
      description: [envelopeOverview, ...parts.flatMap((part) => part.overview ?? [])].join(" "),
    },
    servers: [{ url: `${options.publicOrigin}${basePath}` }],
    paths,
    components: mergeComponents([
      { securitySchemes },
      envelopeComponents(parts),
      ...parts.map((part) => part.components ?? {}),
    ]),
  };
}
