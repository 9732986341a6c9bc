import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, natsUrl, type TestDatabase, uniqueName } from "../harness/index.ts";
import { type FaultReport, formatTable, runFaultSuite } from "./fault-suite.ts";

/**
 * The short form of `npm run faults` (test/faults/run.ts): the real mesh under its supervisor, on the run's
 * PostgreSQL and NATS (its own database, stream and subjects), under gate and agent flows with sandbox humans
 * and a webhook receiver; gate and then webhook-dispatch killed with kill -9. The same invariants as the full
 * form; the recovery times are printed with the table, never asserted.
 */
describe("the fault suite, short form: kill -9 of gate and of webhook-dispatch under load", () => {
  let database: TestDatabase;
  let report: FaultReport;
  const meshLines: string[] = [];

  beforeAll(async () => {
    database = await createTestDatabase("faults");
    const stream = uniqueName("faults").toUpperCase();
    report = await runFaultSuite({
      faults: ["gate", "webhook-dispatch"],
      infrastructure: {
        env: {
          SVC_DATABASE_URL: database.url,
          SVC_NATS_URL: natsUrl(),
          SVC_EVENT_STREAM: stream,
          SVC_EVENT_SUBJECT_PREFIX: `ev_${stream.toLowerCase()}`,
        },
      },
      ports: "free",
      gateFlows: 2,
      agentFlows: 1,
      loadMs: 2000,
      outageMs: 0,
      log: () => {},
      meshLog: (line) => {
        meshLines.push(line);
        if (meshLines.length > 300) meshLines.shift();
      },
    });
    console.log(formatTable(report));
  }, 170_000);
  afterAll(async () => {
    await database?.drop();
  });

  it("ran flows through each fault, answered with ids", () => {
    expect(report.rows.map((row) => row.fault)).toEqual(["kill -9 gate", "kill -9 webhook-dispatch"]);
    for (const row of report.rows) expect(row.answered, row.fault).toBeGreaterThan(0);
  });

  it("every answered id is readable through the gateway after the recovery", () => {
    for (const row of [...report.rows, report.total]) expect(row.readable, row.fault).toBe(row.answered);
  });

  it("every terminal event arrived under exactly one webhook-id: none lost, none duplicated", () => {
    for (const row of [...report.rows, report.total]) {
      expect(row.expected, row.fault).toBeGreaterThan(0);
      expect({ once: row.deliveredOnce, lost: row.lost, duplicates: row.duplicates }, row.fault).toEqual({
        once: row.expected,
        lost: 0,
        duplicates: 0,
      });
    }
  });

  it("the mesh came back by itself: no flow failed, no invariant broken", () => {
    expect(report.total.failedFlows).toEqual([]);
    expect(report.violations, meshLines.slice(-50).join("\n")).toEqual([]);
    // Timings are printed with the table above, never asserted; that they were measured at all is.
    for (const row of report.rows) {
      expect(row.readySeconds, row.fault).toBeDefined();
      expect(row.firstFlowSeconds, row.fault).toBeDefined();
    }
  });
});
