import { randomInt } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { formatReport, runFuzz } from "./fuzz-run.ts";
import { type OpenApiDocument, operationsOf } from "./openapi-operations.ts";

/**
 * The fuzz suite over every operation of the running gateway's OpenAPI document (`fuzz-run.ts`). This
 * file is the short form in `npm test`, on a fixed seed so that its outcome is the same on every run;
 * `npm run fuzz` runs it with FUZZ_INPUTS=100000 and FUZZ_SEED=random, a new seed each time. The seed is
 * printed first; FUZZ_SEED=<seed> replays a run, and each failure prints its seed, path and shrunk
 * counterexample.
 */
const inputs = Number(process.env.FUZZ_INPUTS ?? 3000);
const seed = fuzzSeed(process.env.FUZZ_SEED);

function fuzzSeed(raw = "20261128"): number {
  if (raw === "random") return randomInt(2 ** 31);
  const seed = Number(raw);
  if (!Number.isInteger(seed)) throw new Error(`FUZZ_SEED must be an integer or "random": ${raw}`);
  return seed;
}

/** The mesh's clock at start; the fixture moves it two hours on, where it stays (`fuzz-fixture.ts`). */
const start = new Date("2026-12-01T10:00:00Z");
const httpMethods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

describe("fuzz: every operation of GET /v1/openapi.json", () => {
  let mesh: TestMesh;
  let database: pg.Client;
  let document: OpenApiDocument;

  beforeAll(async () => {
    // The clock stands still for the whole run: nothing expires between a digest and the next.
    mesh = await startTestMesh("fuzz", {
      clockAt: start,
      // Anonymous operations are counted per client IP; every fuzz input comes from 127.0.0.1.
      env: { GATEWAY_RATE_LIMIT_ANONYMOUS_PER_MINUTE: "0" },
    });
    database = new pg.Client({ connectionString: mesh.env.SVC_DATABASE_URL });
    await database.connect();
    document = (await (await fetch(`${mesh.gatewayUrl}/v1/openapi.json`)).json()) as OpenApiDocument;
  });
  afterAll(async () => {
    await database?.end();
    await mesh?.stop();
  });

  test("every operation the document describes is one the fuzz sends inputs to", () => {
    const described = Object.values(document.paths).flatMap((item) =>
      Object.keys(item).filter((key) => httpMethods.includes(key)),
    );
    expect(described.length).toBeGreaterThan(0);
    expect(operationsOf(document).length).toBe(described.length);
  });

  test(`${inputs} inputs: a spec shape every time, never a 5xx, and refused requests change no row`, {
    timeout: 600_000 + inputs * 60,
  }, async () => {
    const report = await runFuzz(mesh, database, {
      start,
      inputs,
      seed,
      concurrency: 4,
      log: (line) => console.log(line),
    });
    console.log(formatReport(report));
    expect(report.sent).toBeGreaterThanOrEqual(inputs);
    expect(report.tallies.filter((t) => t.sent === 0).map((t) => t.label)).toEqual([]);
    expect(
      report.failures.map((f) => `${f.operation} (${f.batch})`),
      report.failures.map((f) => f.report).join("\n\n"),
    ).toEqual([]);
  });
});
