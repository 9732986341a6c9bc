import { createWriteStream, mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { everyFault, type FaultName, formatTable, runFaultSuite } from "./fault-suite.ts";
import { startOwnInfrastructure } from "./own-infrastructure.ts";

/**
 * `npm run faults`: the whole fault suite. The real mesh under its supervisor, on its own PostgreSQL and
 * NATS, under a steady mixed load; every service killed with kill -9 in turn, PostgreSQL stopped in
 * immediate mode, NATS stopped; after each, the invariants. Prints them as a table and exits 1 on any
 * violation.
 *
 *   npm run faults [-- --dir <state dir>] [--ports free|default] [--faults gate,nats,...]
 *
 * --dir keeps PostgreSQL's cluster, the JetStream store and mesh.log there (default: a new temporary
 * directory, removed at the end); --ports default uses `npm start`'s ports (default: free ones, so it runs
 * beside `npm start` and the tests).
 */
const { values } = parseArgs({
  options: {
    dir: { type: "string" },
    ports: { type: "string", default: "free" },
    faults: { type: "string", default: everyFault.join(",") },
  },
});
if (values.ports !== "free" && values.ports !== "default") throw new Error("--ports is free or default");
const faults = values.faults.split(",").map((name) => {
  if (!everyFault.includes(name as FaultName))
    throw new Error(`unknown fault ${name}; one of ${everyFault.join(", ")}`);
  return name as FaultName;
});
const dir = values.dir === undefined ? mkdtempSync(join(tmpdir(), "svc-faults-")) : resolve(values.dir);
const say = (line: string) => process.stdout.write(`${line}\n`);

const infrastructure = await startOwnInfrastructure(dir);
// pg_ctl runs PostgreSQL outside this process group, so Ctrl-C would leave it running.
for (const signal of ["SIGINT", "SIGTERM"] as const)
  process.once(signal, () => void infrastructure.stop().finally(() => process.exit(130)));
const meshLog = createWriteStream(join(dir, "mesh.log"), { flags: "a" });
let failed = true;
try {
  const load = () =>
    loadavg()
      .map((n) => n.toFixed(2))
      .join(" ");
  say(`fault suite: ${faults.length} faults; state and mesh.log in ${dir}; load average ${load()}`);
  const started = performance.now();
  const report = await runFaultSuite({
    faults,
    infrastructure,
    ports: values.ports,
    gateFlows: 3,
    agentFlows: 2,
    loadMs: 4000,
    outageMs: 2000,
    log: say,
    meshLog: (line) => meshLog.write(`${line}\n`),
  });
  say("");
  say(formatTable(report));
  say("");
  say(`took ${((performance.now() - started) / 1000).toFixed(0)} s; load average (1, 5, 15 min) ${load()}`);
  if (report.violations.length === 0) {
    say("every invariant held");
    failed = false;
  } else {
    say(`${report.violations.length} violations:`);
    for (const violation of report.violations) say(`  ${violation}`);
  }
} finally {
  meshLog.end();
  await infrastructure.stop();
  if (values.dir === undefined && !failed) rmSync(dir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
