import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import type { Logger } from "@svc/platform";
import { jsonReply, type RawReply, type RawRoute } from "../http/raw-route.ts";
import { basePath } from "../http/route.ts";

/**
 * `<svc-verify>`, as the build (`gateway/widget/build.ts`, run at install) left it in `gateway/widget/gen`:
 * `{base_url}/widget.<hash>.js` is one version for ever (immutable), `{base_url}/widget.js` the current
 * one, cached briefly with an ETag (decisions.md "Caching headers"). Both answer any origin, as a script
 * loaded with `integrity` and `crossorigin` needs. partner-config publishes the versioned address and
 * its Subresource Integrity hash.
 */
export interface WidgetScript {
  /** The current version's file name, `widget.<hash>.js`. */
  file: string;
  /** The current version's `sha384-…`. */
  integrity: string;
  /** Every version in the folder by file name, the current one included. */
  versions: Map<string, string>;
}

const genDir = new URL("../../widget/gen/", import.meta.url);

/** The built widget, or undefined (logged) when the build has not run: the gateway serves the API without it. */
export function loadWidgetScript(logger: Logger): WidgetScript | undefined {
  try {
    const manifest = JSON.parse(readFileSync(new URL("manifest.json", genDir), "utf8")) as { file: string };
    const versions = new Map(
      readdirSync(genDir)
        .filter((file) => versionedFile.test(file))
        .map((file) => [file, readFileSync(new URL(file, genDir), "utf8")]),
    );
    const code = versions.get(manifest.file);
    if (code === undefined) throw new Error(`${manifest.file} is missing`);
    const integrity = `sha384-${createHash("sha384").update(code).digest("base64")}`;
    return { file: manifest.file, integrity, versions };
  } catch (error) {
    logger.warn("widget not built (npm run build:widget): /widget.js answers 503", { error });
    return undefined;
  }
}

/** How long a browser may reuse `/widget.js` before asking again (with its ETag). */
const currentMaxAgeSeconds = 300;
const currentPath = `${basePath}/widget.js`;
const versionedFile = /^widget\.[0-9a-f]{16}\.js$/;
const versionedPath = new RegExp(`^${basePath}/widget\\.[0-9a-f]{16}\\.js$`);

function scriptReply(file: string, code: string, cacheControl: string, ifNoneMatch: string | undefined): RawReply {
  const etag = `"${file}"`;
  const headers = {
    "content-type": "text/javascript; charset=utf-8",
    "cache-control": cacheControl,
    etag,
    "access-control-allow-origin": "*",
    "cross-origin-resource-policy": "cross-origin",
    "x-content-type-options": "nosniff",
  };
  if (ifNoneMatch?.split(/\s*,\s*/).includes(etag)) return { status: 304, headers, body: "" };
  return { status: 200, headers, body: code };
}

const notBuilt = () =>
  jsonReply(503, { error: "widget_unavailable", message: "the widget is not built on this server" });

export function widgetScriptRoutes(widget: WidgetScript | undefined): RawRoute[] {
  const ifNoneMatch = (headers: { "if-none-match"?: string }) => headers["if-none-match"];
  return [
    {
      path: currentPath,
      method: "GET",
      serve: ({ headers }) =>
        widget
          ? scriptReply(
              widget.file,
              widget.versions.get(widget.file) ?? "",
              `public, max-age=${currentMaxAgeSeconds}`,
              ifNoneMatch(headers),
            )
          : notBuilt(),
    },
    {
      path: versionedPath,
      method: "GET",
      serve: ({ url, headers }) => {
        const file = url.pathname.slice(basePath.length + 1);
        const code = widget?.versions.get(file);
        return code === undefined
          ? jsonReply(404, { error: "not_found", message: "no such widget version: the current one is /widget.js" })
          : scriptReply(file, code, "public, max-age=31536000, immutable", ifNoneMatch(headers));
      },
    },
  ];
}

/** The versioned address and its hash, as partner-config publishes them. */
export const widgetPublication = (widget: WidgetScript | undefined, publicOrigin: string) =>
  widget && { url: `${publicOrigin}${basePath}/${widget.file}`, integrity: widget.integrity };

const scriptResponse = (description: string) => ({
  description,
  content: { "text/javascript": { schema: { type: "string" } } },
});

const notModified = { description: "Unchanged since the ETag sent." };

/** The OpenAPI document's entries: the versioned addresses are published by partner-config, not built by clients. */
export const widgetScriptPaths = {
  "/widget.js": {
    get: {
      operationId: "widgetScript",
      summary:
        "The <svc-verify> element, current version: Cache-Control public, max-age=300 with an ETag (If-None-Match answers 304). Each built version is also served at its own address (widget.{version}.js); partner-config publishes the current one with its Subresource Integrity hash (widget.url, widget.integrity), for <script src integrity crossorigin=anonymous>.",
      security: [],
      responses: {
        "200": scriptResponse("The script; any origin may load it (CORS *)."),
        "304": notModified,
        "503": {
          description: "The widget is not built on this server.",
          content: {
            "application/json": {
              schema: {
                type: "object",
                properties: { error: { const: "widget_unavailable" }, message: { type: "string" } },
              },
            },
          },
        },
      },
    },
  },
  "/widget.{version}.js": {
    get: {
      operationId: "widgetScriptVersion",
      summary:
        "One built version of the <svc-verify> element, for ever: Cache-Control public, max-age=31536000, immutable, with its ETag. The address partner-config publishes as widget.url.",
      security: [],
      parameters: [
        {
          name: "version",
          in: "path",
          required: true,
          description: "The first 16 hex digits of the script's SHA-256.",
          schema: { type: "string", pattern: "^[0-9a-f]{16}$" },
          example: "0123456789abcdef",
        },
      ],
      responses: {
        "200": scriptResponse("The script; any origin may load it (CORS *)."),
        "304": notModified,
        "404": {
          description: "This server has no such version (the current one is at /widget.js).",
          content: {
            "application/json": {
              schema: { type: "object", properties: { error: { const: "not_found" }, message: { type: "string" } } },
            },
          },
        },
      },
    },
  },
};
