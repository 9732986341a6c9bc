import { Agent, request } from "node:http";
import fc from "fast-check";
import type pg from "pg";
import type { TestMesh } from "../harness/test-mesh.ts";
import { type Answer, type AnswerKind, checkAnswer, isRefusal } from "./answer-shape.ts";
import {
  allCredentials,
  allowedOrigin,
  type CredentialName,
  createFuzzFixture,
  type FuzzFixture,
  type Round,
  validForScheme,
} from "./fuzz-fixture.ts";
import { type FuzzOperation, type OpenApiDocument, operationsOf } from "./openapi-operations.ts";
import {
  anyBody,
  anyQuery,
  type BodyInput,
  hostileText,
  type KnownValues,
  pathArbitrary,
  refusedBody,
  refusedQuery,
} from "./schema-arbitrary.ts";
import { changedByRefusals, changedTables, digestTables, settledDigest } from "./table-digest.ts";

/**
 * The fuzz run: rounds of two batches over every operation of the gateway's OpenAPI document. The
 * first batch sends only inputs the spec says are refused (a refused credential, or input that fails
 * validation) and compares a digest of every table before and after it; the second sends inputs of
 * every kind, most of them of the right shape with valid credentials. Every answer must have one of the
 * contract's shapes (`answer-shape.ts`).
 */

export interface FuzzOptions {
  /** The mesh's clock when the run starts (it is moved forward once, then stands still). */
  start: Date;
  /** Inputs to send in all (the run stops after the round that reaches it). */
  inputs: number;
  seed: number;
  /** Operations fuzzed at once (each one's inputs go one after another). */
  concurrency: number;
  log(line: string): void;
}

interface Tally {
  label: string;
  sent: number;
  kinds: Record<AnswerKind, number>;
  /** Answers by HTTP status. */
  statuses: Record<number, number>;
  failures: number;
  /** The slowest answer, in milliseconds. */
  slowestMs: number;
}

interface Failure {
  operation: string;
  batch: "refusals" | "mixed";
  /** fast-check's report: the seed and path to replay, and the shrunk counterexample; or the tables a batch changed. */
  report: string;
}

export interface FuzzReport {
  seed: number;
  operations: FuzzOperation[];
  tallies: Tally[];
  failures: Failure[];
  sent: number;
  rounds: number;
  elapsedMs: number;
}

interface Input {
  path: string;
  query: string;
  body: BodyInput | undefined;
  credential: CredentialName;
  /** Which malformed `Authorization` value, when `credential` is `malformed`. */
  malformed: number;
  headers: [string, string][];
}

const answerTimeoutMs = 30_000;

/** Header values Node's client can send (the server's parser cases are in their own raw-socket test). */
const sendableHeader = (value: string) => /^[\t\x20-\x7e\x80-\xff]*$/.test(value);

const extraHeaders = fc.array(
  fc.oneof(
    fc.tuple(fc.constant("x-svc-include-ratelimit"), fc.constantFrom("true", "false", "TRUE", "1", "")),
    fc.tuple(fc.constant("idempotency-key"), fc.oneof(fc.uuid(), fc.constantFrom(...hostileText), fc.string())),
    fc.tuple(fc.constant("x-forwarded-for"), fc.constantFrom("1.2.3.4", "::1", "2001:db8::1, 10.0.0.1", "garbage", "")),
    fc.tuple(fc.constant("accept"), fc.constantFrom("text/html", "*/*", "application/xml", "text/event-stream")),
    fc.tuple(fc.constant("origin"), fc.constantFrom("null", "https://evil.example", allowedOrigin, "x".repeat(3000))),
    fc.tuple(fc.constant("access-control-request-method"), fc.constantFrom("POST", "GET", "DELETE", "x")),
    fc.tuple(fc.constant("access-control-request-headers"), fc.constantFrom("authorization, content-type", "x-evil")),
    fc.tuple(fc.constant("if-none-match"), fc.constantFrom('"abc"', "*", 'W/"x"')),
    fc.tuple(fc.constant("mcp-protocol-version"), fc.constantFrom("2026-07-28", "2025-11-25", "2024-01-01", "x")),
  ),
  { maxLength: 3 },
);

/** Valid credential names for an operation; the rest of `allCredentials` it must refuse. */
const validFor = (operation: FuzzOperation) =>
  new Set(operation.accepts.flatMap((scheme) => validForScheme[scheme] ?? []));
const refusedFor = (operation: FuzzOperation) => allCredentials.filter((name) => !validFor(operation).has(name));

function inputArbitrary(
  operation: FuzzOperation,
  known: KnownValues,
  malformedCount: number,
  batch: "refusals" | "mixed",
): fc.Arbitrary<Input> | undefined {
  const post = operation.method === "POST";
  const get = operation.method === "GET";
  const anyPayload = fc.record({
    path: pathArbitrary(operation, known, "any"),
    query: get ? anyQuery(operation, known) : fc.constant(""),
    body: post ? anyBody(operation, known) : fc.constant(undefined),
  });
  const refusedPayload = fc.record({
    path: fc.constant(operation.fullPath),
    query: get ? refusedQuery(operation, known) : fc.constant(""),
    body: post ? refusedBody(operation, known) : fc.constant(undefined),
  });
  const malformed = fc.nat({ max: malformedCount - 1 });
  const valid = [...validFor(operation)];
  const complete = (
    payload: fc.Arbitrary<{ path: string; query: string; body: BodyInput | undefined }>,
    credential: fc.Arbitrary<CredentialName>,
    headers: fc.Arbitrary<[string, string][]>,
  ): fc.Arbitrary<Input> =>
    fc
      .record({ payload, credential, malformed, headers })
      .map(({ payload: p, credential: c, malformed: m, headers: h }) => ({
        ...p,
        credential: c,
        malformed: m,
        headers: h,
      }));
  if (batch === "mixed") {
    const credential =
      valid.length === 0
        ? fc.constantFrom(...allCredentials)
        : fc.oneof({ arbitrary: fc.constantFrom(...valid), weight: 4 }, fc.constantFrom(...allCredentials));
    return complete(anyPayload, credential, extraHeaders);
  }
  const noHeaders = fc.constant<[string, string][]>([]);
  if (operation.accepts.length > 0)
    return fc.oneof(
      complete(anyPayload, fc.constantFrom(...refusedFor(operation)), noHeaders),
      complete(refusedPayload, fc.constantFrom(...valid), noHeaders),
    );
  if (operation.answers === "envelope" && (post || get))
    return complete(refusedPayload, fc.constantFrom(...allCredentials), noHeaders);
  if (operation.parameters.some((p) => p.in === "path" && p.schema.pattern !== undefined))
    return complete(
      fc.record({
        path: pathArbitrary(operation, known, "refused"),
        query: fc.constant(""),
        body: fc.constant(undefined),
      }),
      fc.constantFrom(...allCredentials),
      noHeaders,
    );
  return undefined;
}

function headersOf(
  input: Input,
  operation: FuzzOperation,
  fixture: FuzzFixture,
  round: Round,
  batch: string,
): Record<string, string | string[]> {
  // Every MCP client accepts both answers Streamable HTTP allows; without them the server answers 406 to all.
  const headers: Record<string, string | string[]> =
    operation.answers === "json-rpc" ? { accept: "application/json, text/event-stream" } : {};
  for (const [name, value] of input.headers) if (sendableHeader(value)) headers[name] = value;
  const bearer = (credential: string) => {
    headers.authorization = `Bearer ${credential}`;
  };
  switch (input.credential) {
    case "none":
      break;
    case "malformed":
      headers.authorization = fixture.malformed[input.malformed] ?? "Bearer";
      break;
    case "agent":
      bearer(round.agent(operation.operationId));
      break;
    case "session":
      bearer(round.session(operation.operationId));
      break;
    case "grant":
      // Only an accepted create-verification-link consumes a grant token; anything else leaves it usable.
      bearer(batch === "mixed" && validFor(operation).has("grant") ? round.takeGrant() : round.peekGrant());
      break;
    default:
      bearer(fixture.fixed[input.credential] ?? "");
  }
  if (input.credential === "siteWithOrigin") headers.origin = allowedOrigin;
  if (input.credential === "siteNoOrigin") delete headers.origin;
  if (input.credential === "siteWrongOrigin") headers.origin = "https://evil.example";
  if (input.body?.contentType !== undefined) headers["content-type"] = input.body.contentType;
  return headers;
}

function send(
  base: URL,
  agent: Agent,
  method: string,
  target: string,
  headers: Record<string, string | string[]>,
  body: Buffer | undefined,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request({ host: base.hostname, port: base.port, method, path: target, agent, headers }, (response) => {
      answered = true;
      const contentType = response.headers["content-type"] ?? "";
      const status = response.statusCode ?? 0;
      if (contentType.startsWith("text/event-stream")) {
        // A stream runs until the client leaves: its headers are the answer.
        req.destroy();
        resolve({ status, contentType, text: "" });
        return;
      }
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => resolve({ status, contentType, text: Buffer.concat(chunks).toString("utf8") }));
      response.on("error", reject);
    });
    req.setTimeout(answerTimeoutMs, () => req.destroy(new Error(`no answer within ${answerTimeoutMs / 1000} s`)));
    req.on("error", (error: NodeJS.ErrnoException) => {
      if (answered) return;
      // A kept-alive socket the gateway closed as idle just as this request went out on it: the request
      // never reached the gateway, so it is sent again on a new socket (Node's documented remedy).
      if (req.reusedSocket && error.code === "ECONNRESET")
        send(base, agent, method, target, headers, body).then(resolve, reject);
      else reject(error);
    });
    req.end(body);
  });
}

/** Runs `tasks` with at most `limit` at once. */
async function pool<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await task(items[next++] as T);
    }),
  );
}

const emptyKinds = (): Record<AnswerKind, number> => ({
  result: 0,
  refused: 0,
  invalid: 0,
  limited: 0,
  stream: 0,
  rpc: 0,
  raw: 0,
});

export async function runFuzz(mesh: TestMesh, database: pg.Client, options: FuzzOptions): Promise<FuzzReport> {
  const started = performance.now();
  const base = new URL(mesh.gatewayUrl);
  const document = (await (await fetch(`${mesh.gatewayUrl}/v1/openapi.json`)).json()) as OpenApiDocument;
  const operations = operationsOf(document);
  const fixture = await createFuzzFixture(mesh, options.start);
  const agent = new Agent({ keepAlive: true, maxSockets: options.concurrency * 2 });
  const tallies = new Map(
    operations.map((op) => [
      op.label,
      {
        label: op.label,
        sent: 0,
        kinds: emptyKinds(),
        statuses: {},
        failures: 0,
        slowestMs: 0,
      } satisfies Tally as Tally,
    ]),
  );
  const failures: Failure[] = [];
  const runsPerBatch = Math.min(25, Math.max(3, Math.ceil(options.inputs / (operations.length * 2))));
  const needs = {
    sessionOperations: operations.filter((op) => op.accepts.includes("userSession")).map((op) => op.operationId),
    agentOperations: operations.filter((op) => op.accepts.includes("agentKey")).map((op) => op.operationId),
    grants: runsPerBatch + 5,
  };
  let sent = 0;
  let roundNumber = 0;
  options.log(
    `fuzz: seed ${options.seed}, ${operations.length} operations, ${runsPerBatch} inputs per operation and batch, target ${options.inputs}`,
  );
  for (const [table, reason] of Object.entries(changedByRefusals))
    options.log(`fuzz: ${table} is left out of the digest: ${reason}`);

  const runBatch = async (round: Round, batch: "refusals" | "mixed") => {
    const jobs = operations.flatMap((operation, index) => {
      const arbitrary = inputArbitrary(operation, round.known, fixture.malformed.length, batch);
      return arbitrary ? [{ operation, index, arbitrary }] : [];
    });
    await pool(jobs, options.concurrency, async ({ operation, index, arbitrary }) => {
      const tally = tallies.get(operation.label) as Tally;
      const property = fc.asyncProperty(arbitrary, async (input) => {
        const headers = headersOf(input, operation, fixture, round, batch);
        const target = `${input.path}${input.query}`;
        sent++;
        tally.sent++;
        const sentAt = performance.now();
        const answer = await send(base, agent, operation.method, target, headers, input.body?.bytes);
        tally.slowestMs = Math.max(tally.slowestMs, performance.now() - sentAt);
        tally.statuses[answer.status] = (tally.statuses[answer.status] ?? 0) + 1;
        const kind = checkAnswer(document, operation, answer);
        tally.kinds[kind]++;
        const refused = isRefusal(kind, answer);
        if (batch === "refusals" && !refused)
          throw new Error(`an input the spec refuses was answered ${answer.status}: ${answer.text.slice(0, 300)}`);
        if (operation.accepts.length > 0 && !validFor(operation).has(input.credential) && !refused)
          throw new Error(`the credential ${input.credential} was accepted: ${answer.text.slice(0, 300)}`);
      });
      const seed = options.seed + roundNumber * 1000 + index * 2 + (batch === "mixed" ? 1 : 0);
      const details = await fc.check(property, { numRuns: runsPerBatch, seed });
      if (details.failed) {
        tally.failures++;
        const report = `${
          fc.defaultReportMessage(details) ??
          `seed ${details.seed}, path ${details.counterexamplePath}: ${fc.stringify(details.counterexample)}`
        }\n${String(details.errorInstance)}`;
        failures.push({ operation: operation.label, batch, report });
      }
    });
  };

  while (sent < options.inputs) {
    const roundStarted = performance.now();
    const round = await fixture.newRound(roundNumber, needs);
    const before = await settledDigest(database);
    const batchesStarted = performance.now();
    await runBatch(round, "refusals");
    const changed = changedTables(before, await digestTables(database));
    if (changed.length > 0)
      failures.push({
        operation: "(every operation)",
        batch: "refusals",
        report: `round ${roundNumber} (seed ${options.seed}): refused requests changed rows of ${changed.join(", ")}`,
      });
    await runBatch(round, "mixed");
    roundNumber++;
    options.log(
      `fuzz: round ${roundNumber}, ${sent} inputs, ${failures.length} failures (setup ${((batchesStarted - roundStarted) / 1000).toFixed(1)} s, batches ${((performance.now() - batchesStarted) / 1000).toFixed(1)} s)`,
    );
  }
  agent.destroy();
  return {
    seed: options.seed,
    operations,
    tallies: [...tallies.values()],
    failures,
    sent,
    rounds: roundNumber,
    elapsedMs: performance.now() - started,
  };
}

/** The table: operations × inputs sent × answers by kind and status × failures, with totals. */
export function formatReport(report: FuzzReport): string {
  const kinds = Object.keys(emptyKinds()) as AnswerKind[];
  const header = ["operation", "sent", ...kinds, "by HTTP status", "slowest ms", "failures"];
  const rows = report.tallies.map((t) => [
    t.label,
    String(t.sent),
    ...kinds.map((k) => String(t.kinds[k])),
    Object.entries(t.statuses)
      .map(([status, n]) => `${status}:${n}`)
      .join(" "),
    t.slowestMs.toFixed(0),
    String(t.failures),
  ]);
  const statuses: Record<string, number> = {};
  for (const t of report.tallies)
    for (const [status, n] of Object.entries(t.statuses)) statuses[status] = (statuses[status] ?? 0) + n;
  const total = (pick: (t: Tally) => number) => String(report.tallies.reduce((sum, t) => sum + pick(t), 0));
  rows.push([
    "TOTAL",
    total((t) => t.sent),
    ...kinds.map((k) => total((t) => t.kinds[k])),
    Object.entries(statuses)
      .map(([status, n]) => `${status}:${n}`)
      .join(" "),
    Math.max(...report.tallies.map((t) => t.slowestMs)).toFixed(0),
    String(report.failures.length),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) =>
        i === 0 || i === cells.length - 3 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0),
      )
      .join("  ");
  return [
    line(header),
    ...rows.slice(0, -1).map(line),
    line(rows.at(-1) ?? []),
    `${report.sent} inputs in ${report.rounds} rounds, ${(report.elapsedMs / 1000).toFixed(0)} s, seed ${report.seed}, ${report.failures.length} failures`,
    ...report.failures.map((f) => `FAILED ${f.operation} (${f.batch}):\n${f.report}`),
  ].join("\n");
}
