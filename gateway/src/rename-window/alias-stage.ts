import { InputValidationError, OperationError } from "../http/errors.ts";
import type { Outcome, Stage } from "../http/pipeline.ts";
import type { ValidationIssue } from "../http/schema.ts";
import type { AliasRow, Rename } from "./aliases.ts";

const has = (object: Record<string, unknown>, name: string): boolean =>
  Object.hasOwn(object, name) && object[name] !== undefined;
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

export interface RequestAliasing {
  /** The input with old names and values read as new ones. */
  input: Record<string, unknown>;
  /** Old names the request sent without their new ones (what `_deprecation.used` lists). */
  used: Rename[];
  /** Field renames applied, to name fields in validation errors as the request did. */
  renamed: Rename[];
}

/**
 * Reads a request's old names as new ones. The new name wins when both are sent (the old one is then
 * ignored like any unknown field). From the sunset on, a request that sends an old name alone is
 * refused with `alias_retired`: it would otherwise be read as if the field were missing.
 */
export function aliasRequest(
  rows: readonly AliasRow[],
  input: Record<string, unknown>,
  retiredSince: Date | undefined,
): RequestAliasing {
  const retired = retiredSince !== undefined;
  const out: Record<string, unknown> = { ...input };
  const used: Rename[] = [];
  const renamed: Rename[] = [];
  const refused: string[] = [];
  for (const row of rows) {
    if (row.old !== row.new && has(out, row.old)) {
      if (!has(out, row.new)) {
        if (retired) refused.push(`${row.old} was renamed ${row.new}: send ${row.new}`);
        else {
          out[row.new] = out[row.old];
          used.push({ old: row.old, new: row.new });
          renamed.push(row);
        }
      }
      delete out[row.old];
    }
    const { values } = row;
    if (values && has(out, row.new)) {
      const given = out[row.new];
      const renameValue = (value: unknown): unknown => {
        const rename = values.find((r) => r.old === value && r.old !== r.new);
        if (!rename) return value;
        if (retired) refused.push(`${row.new} value ${rename.old} was renamed ${rename.new}: send ${rename.new}`);
        else used.push({ old: `${row.new}=${rename.old}`, new: `${row.new}=${rename.new}` });
        return rename.new;
      };
      out[row.new] = Array.isArray(given) ? given.map(renameValue) : renameValue(given);
    }
  }
  if (retiredSince !== undefined && refused.length > 0) {
    throw new OperationError(
      400,
      `old names are no longer accepted since ${retiredSince.toISOString().slice(0, 10)}: ${refused.join("; ")}`,
      { code: "alias_retired" },
    );
  }
  return { input: out, used, renamed };
}

/** Names validation problems as the request did: `scope must not be empty`, not `gate …`. */
export function renameIssues(issues: readonly ValidationIssue[], renamed: readonly Rename[]): ValidationIssue[] {
  return issues.map((issue) => {
    const rename = renamed.find(
      (r) =>
        issue.propertyPath === r.new ||
        issue.propertyPath.startsWith(`${r.new}.`) ||
        issue.propertyPath.startsWith(`${r.new}[`),
    );
    if (!rename) return issue;
    const propertyPath = rename.old + issue.propertyPath.slice(rename.new.length);
    const message = issue.message.startsWith(issue.propertyPath)
      ? propertyPath + issue.message.slice(issue.propertyPath.length)
      : issue.message;
    return { ...issue, propertyPath, message };
  });
}

/** During the window a result carries its old names too; from the sunset on, never. */
export function aliasResult(rows: readonly AliasRow[], result: unknown, retired: boolean): unknown {
  if (!isObject(result)) return result;
  const out: Record<string, unknown> = { ...result };
  for (const row of rows) {
    if (retired) {
      delete out[row.old];
      continue;
    }
    if (!has(out, row.new) || has(out, row.old)) continue;
    if (!row.values) {
      out[row.old] = out[row.new];
      continue;
    }
    const legacy = row.values.find((r) => r.new === out[row.new]);
    if (legacy) out[row.old] = legacy.old;
  }
  return out;
}

export interface AliasOptions {
  table: readonly AliasRow[];
  sunset: Date;
  /** Where the rename is documented: `Link: <…>; rel="deprecation"` and `_deprecation.link`. */
  link: string;
}

/**
 * Before validate: old names in, both names out, and the deprecation signals (headers and
 * `_deprecation`) for a request that used an old name alone. Acts on the routes the table names, by
 * operationId, so it applies to every route that declares one of them.
 */
export function aliasStage(options: AliasOptions): Stage {
  const byOperation = Map.groupBy(options.table, (row) => row.operationId);
  const sunsetText = options.sunset.toISOString().replace(".000Z", "Z");
  const sunsetHttpDate = options.sunset.toUTCString();
  return {
    name: "alias",
    async run(ctx, next) {
      const rows = byOperation.get(ctx.route.operationId);
      if (!rows) return next();
      const retired = ctx.clock.now().getTime() >= options.sunset.getTime();
      const requestRows = rows.filter((row) => row.in === (ctx.route.method === "GET" ? "query" : "body"));
      const received = ctx.rawInput;
      const aliasing = aliasRequest(requestRows, received, retired ? options.sunset : undefined);
      ctx.rawInput = aliasing.input;
      if (aliasing.used.length > 0) {
        ctx.responseHeaders.deprecation = "true";
        ctx.responseHeaders.sunset = sunsetHttpDate;
        ctx.responseHeaders.link = `<${options.link}>; rel="deprecation"`;
        ctx.extras._deprecation = { used: aliasing.used, sunset: sunsetText, link: options.link };
      }

      const outcome = await next();
      if (outcome.kind === "invalid")
        return {
          kind: "invalid",
          body: new InputValidationError(received, renameIssues(outcome.body.errors, aliasing.renamed)).toBody(),
        };
      if (outcome.kind !== "ok") return outcome;
      const resultRows = rows.filter((row) => row.in === "result");
      return { kind: "ok", data: aliasResult(resultRows, outcome.data, retired) } satisfies Outcome;
    },
  };
}
