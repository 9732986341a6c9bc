import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { parse } from "yaml";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { svcctlJson } from "./agent-support.ts";
import { dataError, newGate, newPartner, partnerApi, result } from "./gate-support.ts";

/** A scrape of `/metrics`: each sample's value by its name and labels, as Prometheus' text format writes them. */
type Scrape = Map<string, number>;

function parseScrape(text: string): Scrape {
  const samples: Scrape = new Map();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

/** The sample `name{labels}` (labels in the order the metric declares them); 0 when absent. */
const sample = (scrape: Scrape, name: string, labels: Record<string, string> = {}): number => {
  const entries = Object.entries(labels);
  const key = entries.length === 0 ? name : `${name}{${entries.map(([k, v]) => `${k}="${v}"`).join(",")}}`;
  return scrape.get(key) ?? 0;
};

/** The metric names a scrape declares (`# TYPE`), with the series a histogram or summary writes under its name. */
function declaredNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name as string);
    if (type === "histogram") for (const suffix of ["_bucket", "_count", "_sum"]) names.add(`${name}${suffix}`);
    if (type === "summary") for (const suffix of ["_count", "_sum"]) names.add(`${name}${suffix}`);
  }
  return names;
}

/**
 * The metric names a PromQL expression selects: what is left once label matchers, range selectors, grouping
 * clauses, function calls, numbers and operators are taken out.
 */
function selectedMetrics(expr: string): string[] {
  const selectors = expr
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ")
    .replace(/\b[a-z_]+\s*\(/g, " ");
  const keywords = new Set(["and", "or", "unless", "bool", "offset"]);
  return [...selectors.matchAll(/\b[a-zA-Z_:][a-zA-Z0-9_:]*\b/g)]
    .map(([name]) => name)
    .filter((name) => !keywords.has(name));
}

const observability = new URL("../../deploy/observability/", import.meta.url);

/**
 * Every service's port and the gateway's console port serve Prometheus metrics without a credential; a scrape
 * before and after a known workload (three verifications a sandbox human confirms, two calls without a
 * credential) shows each counter moved by what the workload did, and the queues drained.
 */
describe("metrics move with the work", () => {
  let mesh: TestMesh;
  let hooks: Server;
  let delivered = 0;
  let before: Record<string, Scrape>;
  let after: Record<string, Scrape>;
  /** What each process declared at its last scrape. */
  const declared = new Map<string, Set<string>>();
  const targets = () => ({
    gateway: mesh.consoleUrl,
    gate: mesh.urls.gate as string,
    "webhook-dispatch": mesh.urls["webhook-dispatch"] as string,
    agentlink: mesh.urls.agentlink as string,
    account: mesh.urls.account as string,
    signing: mesh.urls.signing as string,
  });
  const scrapeAll = async (): Promise<Record<string, Scrape>> => {
    const scrapes: Record<string, Scrape> = {};
    for (const [name, url] of Object.entries(targets())) {
      const response = await fetch(`${url}/metrics`);
      expect(response.status, `${name} /metrics`).toBe(200);
      expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
      const text = await response.text();
      scrapes[name] = parseScrape(text);
      declared.set(name, declaredNames(text));
    }
    return scrapes;
  };
  const moved = (service: string, name: string, labels: Record<string, string> = {}) =>
    sample(after[service] as Scrape, name, labels) - sample(before[service] as Scrape, name, labels);

  beforeAll(async () => {
    hooks = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        delivered++;
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => hooks.listen(0, "127.0.0.1", resolve));
    mesh = await startTestMesh("metrics");
    const api = partnerApi(mesh);
    const svcctl = svcctlJson(mesh);
    const partner = await newPartner(mesh, "Measured");
    await newGate(mesh, partner.organizationId, { key: "login" });
    await svcctl([
      ...["webhook", "add", "--org", partner.organizationId],
      ...["--url", `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hooks`],
    ]);
    // One sandbox human a link: one person's second link, created after the first was confirmed (at once, by the
    // creating process), would be a Recent Presence pass, with no ceremony and no webhook of its own.
    const humans: string[] = [];
    for (let i = 0; i < 3; i++)
      humans.push(
        (await svcctl(["human", "create", "--env", "development", "--behavior", "confirm"])).svc_user_id as string,
      );
    // A grant is good for one link.
    const grants: string[] = [];
    for (let i = 0; i < 3; i++)
      grants.push(
        result(await api.post("/sdk/create-session", { partner_user_id: `measured-user-${i}` }, partner.devSecret))
          .anchor_grant_token as string,
      );

    before = await scrapeAll();
    for (const [i, grant] of grants.entries())
      result(await api.post("/sdk/create-verification-link", { gate: "login", svc_user_id: humans[i] }, grant));
    for (let i = 0; i < 2; i++)
      expect(dataError(await api.post("/sdk/create-session", { partner_user_id: "nobody" })).statusCode).toBe(401);
    await vi.waitFor(
      () => {
        if (delivered < 3) throw new Error(`${delivered} deliveries`);
      },
      { timeout: 30_000, interval: 100 },
    );
    after = await vi.waitFor(
      async () => {
        const scrapes = await scrapeAll();
        if (sample(scrapes.gate as Scrape, "gate_requests", { status: "pending" }) > 0)
          throw new Error("a request is still pending");
        return scrapes;
      },
      { timeout: 15_000, interval: 200 },
    );
  }, 180_000);
  afterAll(async () => {
    await mesh?.stop();
    hooks?.close();
  });

  test("the gateway counts each public operation by status, and 401s by cause", () => {
    expect(moved("gateway", "gateway_requests_total", { operation: "createVerificationLink", status: "200" })).toBe(3);
    expect(moved("gateway", "gateway_requests_total", { operation: "createSession", status: "401" })).toBe(2);
    expect(moved("gateway", "gateway_unauthenticated_total", { cause: "missing_bearer" })).toBe(2);
    expect(moved("gateway", "gateway_request_duration_seconds_count", { operation: "createVerificationLink" })).toBe(3);
  });

  test("gate counts the RPCs it answered and keeps its requests by status", () => {
    const rpc = { rpc_service: "svc.gate.v1.GateService", rpc_method: "CreateVerificationLink" };
    expect(moved("gate", "rpc_server_requests_total", { ...rpc, code: "ok" })).toBe(3);
    expect(moved("gate", "rpc_server_duration_seconds_count", rpc)).toBe(3);
    // Gate authenticated each grant token in the create call itself: the gateway asked nothing before it.
    const asked = { rpc_service: "svc.gate.v1.GateService", rpc_method: "AuthenticateGrant", code: "ok" };
    expect(moved("gate", "rpc_server_requests_total", asked)).toBe(0);
    expect(moved("gate", "gate_requests", { status: "completed" })).toBe(3);
    expect(sample(after.gate as Scrape, "gate_requests", { status: "pending" })).toBe(0);
  });

  test("webhook-dispatch counts every attempt, and no queue is left behind", () => {
    expect(moved("webhook-dispatch", "webhook_delivery_attempts_total", { outcome: "delivered" })).toBe(delivered);
    expect(moved("webhook-dispatch", "webhook_delivery_attempts_total", { outcome: "failed" })).toBe(0);
    expect(sample(after["webhook-dispatch"] as Scrape, "webhook_oldest_due_delivery_age_seconds")).toBe(0);
    for (const service of ["gate", "webhook-dispatch", "agentlink"])
      expect(sample(after[service] as Scrape, "outbox_oldest_unrelayed_age_seconds"), service).toBe(0);
  });

  test("every metric the shipped alert rules and dashboard select is one a process serves", () => {
    const rules = parse(readFileSync(new URL("prometheus-alerts.yaml", observability), "utf8")) as {
      groups: { rules: { alert: string; expr: string }[] }[];
    };
    const dashboard = JSON.parse(readFileSync(new URL("grafana-dashboard.json", observability), "utf8")) as {
      panels: { title: string; targets: { expr: string }[] }[];
    };
    const expressions = [
      ...rules.groups.flatMap((group) => group.rules.map((rule) => ({ where: rule.alert, expr: rule.expr }))),
      ...dashboard.panels.flatMap((panel) =>
        panel.targets.map((target) => ({ where: panel.title, expr: target.expr })),
      ),
    ];
    // Prometheus' own `up`, and kube-state-metrics' pod readiness (deploy/observability/README.md says it is needed).
    const served = new Set(["up", "kube_pod_status_ready", ...[...declared.values()].flatMap((names) => [...names])]);
    const selecting = expressions.map(({ where, expr }) => ({ where, names: selectedMetrics(expr) }));
    expect(selecting.filter(({ names }) => names.length === 0)).toEqual([]);
    expect(
      selecting.flatMap(({ where, names }) =>
        names.filter((name) => !served.has(name)).map((name) => `${where}: ${name}`),
      ),
    ).toEqual([]);
  });

  test("agentlink serves its cards by status, every label a status and never an id", () => {
    for (const status of ["queued", "approved", "denied", "cancelled", "expired"])
      expect(after.agentlink?.has(`agentlink_cards{status="${status}"}`), status).toBe(true);
    for (const scrape of Object.values(after))
      for (const key of scrape.keys()) expect(key).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-|org_|req_|msg_/);
  });
});
