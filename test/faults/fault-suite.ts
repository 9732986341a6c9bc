import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { createClient } from "@connectrpc/connect";
import { consoleTransport } from "@svc/local-mesh/console-client";
import { type Mesh, type ServiceName, startMesh } from "@svc/local-mesh/mesh";
import { AccountConsoleService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { AgentConsoleService } from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { ConsoleService, KeyType } from "@svc/proto/console/v1/console_pb.js";
import { GateConsoleService, GateType } from "@svc/proto/gate/v1/gate_pb.js";
import { WebhookConsoleService } from "@svc/proto/webhook/v1/webhook_pb.js";
import { type CarefulPartner, carefulPartner, GaveUp, type RetryCounts, untilItWorks } from "./careful-partner.ts";
import { startWebhookReceiver, type WebhookReceiver } from "./webhook-receiver.ts";

/** A service killed with kill -9, PostgreSQL stopped in immediate mode, or NATS stopped; each then comes back. */
export type FaultName = ServiceName | "postgres" | "nats";

export const everyFault: readonly FaultName[] = [
  "gateway",
  "gate",
  "account",
  "agentlink",
  "signing",
  "webhook-dispatch",
  "postgres",
  "nats",
];

/** Where the mesh runs: its shared settings, and how the suite takes PostgreSQL and NATS away and back. */
export interface FaultInfrastructure {
  /** SVC_DATABASE_URL, SVC_NATS_URL and whatever else every process gets. */
  env: Record<string, string>;
  /** `pg_ctl stop -m immediate`, then a start on the same data directory and port. */
  postgres?: { crash(): Promise<void>; start(): Promise<void> };
  /** A stop of nats-server, then a start on the same JetStream store directory and port. */
  nats?: { stop(): Promise<void>; start(): Promise<void> };
}

export interface FaultSuiteOptions {
  faults: readonly FaultName[];
  infrastructure: FaultInfrastructure;
  /** The documented ports (as `npm start`) or free ones, so the suite runs beside another mesh. */
  ports: "default" | "free";
  /** Flows running at once: gate flows with sandbox humans, and agent flows. */
  gateFlows: number;
  agentFlows: number;
  /** Load before each fault. */
  loadMs: number;
  /** How long PostgreSQL or NATS stays away. */
  outageMs: number;
  /** Progress lines. */
  log: (line: string) => void;
  /** Every line the mesh's processes and its supervisor print. */
  meshLog: (line: string) => void;
}

/** One fault's invariants, over the flows that started after the previous check and before this one. */
interface FaultRow {
  fault: string;
  /** Flows that were answered with an id (request_id, the agent's request_id). */
  answered: number;
  /** Of those, how many the status read (or check-status) found after the recovery. */
  readable: number;
  /** Terminal events the answered flows must produce (a completed or failed request, a resolved card). */
  expected: number;
  /** Of those, delivered under exactly one webhook-id. */
  deliveredOnce: number;
  /** Events (terminal or not) delivered under more than one webhook-id. */
  duplicates: number;
  /** Expected events never delivered. */
  lost: number;
  /** Arrivals of a webhook-id already received: allowed, counted apart. */
  redeliveries: number;
  /** Flows whose sandbox human never answered (see `unansweredAfterMs`): reported, not a violation. */
  unanswered: number;
  /** Flows that gave up (no final answer in time) or were refused along the way, with why. */
  failedFlows: string[];
  /** Calls sent again. */
  retries: number;
  /** From the fault to `/readyz?mesh=1` answering 200. */
  readySeconds?: number;
  /** From the fault until a flow of each kind (gate, agent) started after it has completed. */
  firstFlowSeconds?: number;
}

export interface FaultReport {
  rows: FaultRow[];
  total: FaultRow;
  /** Every broken invariant, in words; empty when the mesh held. */
  violations: string[];
}

interface Flow {
  kind: "gate" | "agent";
  phase: number;
  startedAt: number;
  endedAt?: number;
  /** The id the partner was answered with. */
  id?: string;
  cardId?: string;
  credential?: string;
  /** The last status read: the terminal one once the flow ended. */
  final?: string;
  /** Still pending (queued) `unansweredAfterMs` after the id: the sandbox human's answer was lost. */
  unanswered?: boolean;
  failure?: string;
  retries: number;
  done?: Promise<void>;
}

/** How long one call (with its retries) may take: longer than the gateway's Idempotency-Key lease (60 s). */
const callDeadlineMs = 90_000;
/** How long the recovery may take: a flow of each kind started after the fault completes within it. */
const flowDeadlineMs = 150_000;
/**
 * A sandbox human answers at once, in the background of the call that created the request or card; when that
 * answer is lost (its service killed, signing or account away at that moment) the service's sandbox sweep
 * answers once it is due (5 s after the create, then every second). A flow still pending this long stops
 * reading and counts as unanswered: reported (the goal is none), not a broken invariant (no terminal event is
 * due, and the id stays readable).
 */
const unansweredAfterMs = 10_000;
const deliveryWaitMs = 60_000;
/** After every expected event arrived: time for a late duplicate to show up. */
const duplicateSettleMs = 2000;

export async function runFaultSuite(options: FaultSuiteOptions): Promise<FaultReport> {
  const { log } = options;
  const receiver = await startWebhookReceiver();
  const mesh = await startMesh({
    env: { SVC_LOG_LEVEL: "warn", ...options.infrastructure.env },
    ports: options.ports,
    log: options.meshLog,
    supervise: {
      onStatus: (down) => log(down.length ? `  supervisor: down ${down.join(", ")}` : "  supervisor: all up"),
    },
  });
  try {
    return await underLoad(mesh, receiver, options);
  } finally {
    await mesh.stop();
    receiver.close();
  }
}

async function underLoad(mesh: Mesh, receiver: WebhookReceiver, options: FaultSuiteOptions): Promise<FaultReport> {
  const { log } = options;
  const transport = consoleTransport(mesh.consoleUrl, mesh.consoleToken, "1.1");
  const consoleApi = createClient(ConsoleService, transport);
  const accounts = createClient(AccountConsoleService, transport);
  const { organizationId } = await consoleApi.createOrganization({ name: "Fault suite" });
  const created = await consoleApi.createKey({
    organizationId,
    environment: Environment.DEVELOPMENT,
    type: KeyType.SECRET,
    allowedOrigins: [],
    allowedGates: [],
  });
  // The load makes far more calls than a development key's tier allows.
  for (const bucket of ["per_minute", "hourly", "daily", "in_flight"])
    await consoleApi.setKeyLimits({ keyId: created.keyId, bucket, limit: 1_000_000 });
  const secretKey = created.key;
  const gate = "faults";
  await createClient(GateConsoleService, transport).createGate({
    organizationId,
    environment: Environment.DEVELOPMENT,
    key: gate,
    type: GateType.HUMAN,
    status: "active",
    notarizeOffer: false,
  });
  // Agent keys keep their tier (120 a minute each): the agent flows take turns over several agents.
  const agentKeys = await Promise.all(
    Array.from({ length: 8 }, async (_, i) => {
      const registered = await createClient(AgentConsoleService, transport).registerAgent({
        organizationId,
        environment: Environment.DEVELOPMENT,
        name: `Fault_Bot_${i}`,
        categories: ["payments"],
      });
      return registered.agentKey;
    }),
  );
  const endpoint = await createClient(WebhookConsoleService, transport).addEndpoint({
    organizationId,
    url: receiver.url,
    types: [],
  });
  receiver.setSecret(endpoint.secret);

  const flows: Flow[] = [];
  let phase = 0;
  let loading = true;
  let agentTurn = 0;

  const sandboxHuman = async (counts: RetryCounts) =>
    (
      await untilItWorks(
        () => accounts.createSandboxHuman({ environment: Environment.DEVELOPMENT, behavior: SandboxBehavior.CONFIRM }),
        counts,
        callDeadlineMs,
      )
    ).svcUserId;

  /**
   * Reads a status until it is no longer `pending` / `queued`; `error` (gate's "retry" status) is read again,
   * and does not count towards the time the sandbox human has to answer.
   */
  const untilTerminal = async (flow: Flow, read: () => Promise<string>, open: string) => {
    const deadline = flow.startedAt + flowDeadlineMs;
    let openSince: number | undefined;
    for (;;) {
      flow.final = await read();
      if (flow.final !== open && flow.final !== "error") return;
      if (performance.now() > deadline) throw new GaveUp(`still ${flow.final} after ${flowDeadlineMs} ms`);
      if (flow.final === "error") {
        openSince = undefined;
        flow.retries++;
        await sleep(250);
        continue;
      }
      openSince ??= performance.now();
      if (performance.now() - openSince > unansweredAfterMs) {
        flow.unanswered = true;
        return;
      }
    }
  };

  /** create-session, create-verification-link for a sandbox human who confirms, status reads until it ends. */
  const gateFlow = async (flow: Flow, partner: CarefulPartner) => {
    const human = await sandboxHuman(flow);
    const user = `user-${randomUUID()}`;
    const grant = (await partner.post("/sdk/create-session", { partner_user_id: user }, secretKey, randomUUID()))
      .anchor_grant_token as string;
    const link = await partner.post("/sdk/create-verification-link", { gate, svc_user_id: human }, grant, randomUUID());
    flow.id = link.request_id as string;
    await untilTerminal(
      flow,
      async () =>
        (await partner.get("/verification/status", { request_id: flow.id, wait_seconds: 5 }, secretKey, true)).status,
      "pending",
    );
  };

  /** inquire to a sandbox human who confirms, check-status (a long-poll) until the card leaves queued. */
  const agentFlow = async (flow: Flow, partner: CarefulPartner) => {
    const human = await sandboxHuman(flow);
    const agentKey = agentKeys[agentTurn++ % agentKeys.length] as string;
    const requestId = randomUUID();
    const card = await partner.post(
      "/agentlink/inquire",
      {
        request_id: requestId,
        svc_user_id: human,
        action: { summary_title: "Pay invoice 2231", category: "payments" },
      },
      agentKey,
      randomUUID(),
    );
    flow.id = requestId;
    flow.cardId = card.card_id as string;
    flow.credential = agentKey;
    await untilTerminal(
      flow,
      async () =>
        (await partner.get("/agentlink/check-status", { request_id: requestId, wait_seconds: 5 }, agentKey)).status,
      "queued",
    );
  };

  const worker = async (kind: Flow["kind"]) => {
    while (loading) {
      const flow: Flow = { kind, phase, startedAt: performance.now(), retries: 0 };
      flows.push(flow);
      const partner = carefulPartner(mesh.gatewayUrl, flow, callDeadlineMs);
      flow.done = (kind === "gate" ? gateFlow(flow, partner) : agentFlow(flow, partner)).then(
        () => {
          flow.endedAt = performance.now();
        },
        (error: unknown) => {
          flow.endedAt = performance.now();
          flow.failure = error instanceof Error ? `${error.constructor.name}: ${error.message}` : String(error);
        },
      );
      await flow.done;
    }
  };
  const workers = [
    ...Array.from({ length: options.gateFlows }, () => worker("gate")),
    ...Array.from({ length: options.agentFlows }, () => worker("agent")),
  ];

  const meshReady = async () => {
    try {
      const response = await fetch(`${mesh.gatewayUrl}/readyz?mesh=1`, { signal: AbortSignal.timeout(2000) });
      return response.status === 200;
    } catch {
      return false;
    }
  };

  const inject = async (fault: FaultName) => {
    const { postgres, nats } = options.infrastructure;
    if (fault === "postgres") {
      if (!postgres) throw new Error("this infrastructure cannot stop PostgreSQL");
      await postgres.crash();
      await sleep(options.outageMs);
      await postgres.start();
    } else if (fault === "nats") {
      if (!nats) throw new Error("this infrastructure cannot stop NATS");
      await nats.stop();
      await sleep(options.outageMs);
      await nats.start();
    } else {
      // From outside, as a crash would: the supervisor, not the suite, brings it back.
      const pid = mesh.pid(fault);
      if (pid === undefined) throw new Error(`${fault} is not running`);
      process.kill(pid, "SIGKILL");
      while (processAlive(pid)) await sleep(10);
    }
  };

  const rows: FaultRow[] = [];
  const violations: string[] = [];
  try {
    for (const [index, fault] of options.faults.entries()) {
      await sleep(options.loadMs);
      log(`fault ${index + 1}/${options.faults.length}: ${describeFault(fault)}`);
      const at = performance.now();
      await inject(fault);
      const recoveryDeadline = at + callDeadlineMs;
      while (!(await meshReady())) {
        if (performance.now() > recoveryDeadline) break;
        await sleep(100);
      }
      const readyAt = performance.now();
      const recovered: { readySeconds?: number; firstFlowSeconds?: number } = {};
      if (readyAt <= recoveryDeadline) recovered.readySeconds = (readyAt - at) / 1000;
      else violations.push(`${fault}: /readyz?mesh=1 not 200 within ${callDeadlineMs / 1000} s of the fault`);
      // Recovered once a flow of every kind that runs, started after the fault, has completed: an agent flow
      // alone proves nothing about gate.
      const kinds = [...new Set(flows.map((f) => f.kind))];
      for (;;) {
        const firsts = kinds.map((kind) =>
          flows
            .filter((f) => f.kind === kind && f.startedAt > at && f.endedAt !== undefined && isComplete(f))
            .reduce((first, f) => Math.min(first, f.endedAt as number), Number.POSITIVE_INFINITY),
        );
        const last = Math.max(...firsts);
        if (last !== Number.POSITIVE_INFINITY) {
          recovered.firstFlowSeconds = (last - at) / 1000;
          break;
        }
        if (performance.now() > at + flowDeadlineMs) {
          violations.push(
            `${fault}: no flow of each kind started after the fault completed within ${flowDeadlineMs / 1000} s`,
          );
          break;
        }
        await sleep(100);
      }
      log(
        `  ready after ${seconds(recovered.readySeconds)} s, a flow of each kind after ${seconds(recovered.firstFlowSeconds)} s; draining`,
      );
      // Flows from here on count for the next fault; this fault's are drained and checked.
      phase = index + 1;
      const row = await checkPhase(
        describeFault(fault),
        flows.filter((f) => f.phase === index),
        mesh.gatewayUrl,
        secretKey,
        receiver,
      );
      Object.assign(row, recovered);
      rows.push(row);
      violations.push(...violationsOf(row));
      log(`  ${summarise(row)}`);
    }
  } finally {
    loading = false;
    await Promise.all(workers);
  }
  const total = await checkPhase("all flows", flows, mesh.gatewayUrl, secretKey, receiver);
  // A second message for an event nobody's flow tracked (a flow that gave up) is a duplicate too.
  for (const key of receiver.dedupKeys()) {
    const ids = receiver.webhookIds(key).size;
    if (ids > 1) violations.push(`${key} was delivered under ${ids} webhook-ids`);
  }
  violations.push(...violationsOf(total).filter((v) => !violations.includes(v)));
  if (receiver.badSignatures() > 0) violations.push(`${receiver.badSignatures()} deliveries had a bad signature`);
  return { rows, total, violations: [...new Set(violations)] };
}

/** The flow ran to a terminal status. */
const isComplete = (flow: Flow) => flow.endedAt !== undefined && flow.failure === undefined && !flow.unanswered;

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function describeFault(fault: FaultName): string {
  if (fault === "postgres") return "postgres stop -m immediate";
  if (fault === "nats") return "nats stop/start";
  return `kill -9 ${fault}`;
}

/** The terminal event a flow's final status promises (none for a card cancelled or a request nobody opened). */
function expectedEvent(flow: Flow): string | undefined {
  if (flow.kind === "gate") {
    if (flow.final === "completed") return "gate.human_verified";
    if (flow.final === "failed") return "gate.unavailable";
    return undefined;
  }
  if (flow.final === "approved") return "agents_ask.resolution.confirmed";
  if (flow.final === "denied") return "agents_ask.resolution.denied";
  if (flow.final === "expired") return "agents_ask.resolution.expired";
  return undefined;
}

/** The webhook-ids under which the flow's terminal event arrived, and how many distinct events they carried. */
function deliveriesOf(flow: Flow, event: string, receiver: WebhookReceiver): { ids: Set<string>; events: number } {
  if (flow.kind === "gate") return { ids: new Set(receiver.webhookIds(`${event}:${flow.id}`)), events: 1 };
  if (event === "agents_ask.resolution.expired")
    return { ids: new Set(receiver.webhookIds(`${event}:${flow.cardId}`)), events: 1 };
  const keys = receiver.resolutionKeys(flow.id as string);
  const ids = new Set<string>();
  for (const key of keys) for (const id of receiver.webhookIds(key)) ids.add(id);
  return { ids, events: keys.size };
}

/**
 * Waits for the flows to end, then checks them through the gateway, as a partner would: each answered id
 * is read back, each terminal event arrives under exactly one webhook-id (its redeliveries aside), and no
 * other event of theirs (a proposed card) arrives twice.
 */
async function checkPhase(
  fault: string,
  flows: Flow[],
  gatewayUrl: string,
  secretKey: string,
  receiver: WebhookReceiver,
): Promise<FaultRow> {
  await Promise.all(flows.map((f) => f.done));
  const counts = { retries: 0 };
  const partner = carefulPartner(gatewayUrl, counts, callDeadlineMs);
  const answered = flows.filter((f) => f.id !== undefined);
  let readable = 0;
  for (const flow of answered) {
    try {
      if (flow.kind === "gate") {
        // `status: "error"` is gate's "retry" inside a normal answer.
        const read = () => partner.get("/verification/status", { request_id: flow.id }, secretKey, true);
        let status = await read();
        for (let attempt = 0; status.status === "error" && attempt < 100; attempt++) {
          await sleep(250);
          status = await read();
        }
        if (status.found === true) readable++;
      } else {
        const status = await partner.get("/agentlink/check-status", { request_id: flow.id }, flow.credential as string);
        if (typeof status.status === "string") readable++;
      }
    } catch {
      // Not readable: counted by what is missing.
    }
  }
  const expecting = answered.flatMap((flow) => {
    const event = expectedEvent(flow);
    return event === undefined ? [] : [{ flow, event }];
  });
  const deadline = performance.now() + deliveryWaitMs;
  while (
    expecting.some(({ flow, event }) => deliveriesOf(flow, event, receiver).ids.size === 0) &&
    performance.now() < deadline
  )
    await sleep(200);
  await sleep(duplicateSettleMs);

  let deliveredOnce = 0;
  let lost = 0;
  let duplicates = 0;
  let redeliveries = 0;
  for (const { flow, event } of expecting) {
    const { ids, events } = deliveriesOf(flow, event, receiver);
    if (ids.size === 0) lost++;
    else if (ids.size === 1 && events === 1) deliveredOnce++;
    for (const id of ids) redeliveries += receiver.arrivals(id) - 1;
  }
  for (const flow of answered) {
    const keys =
      flow.kind === "gate"
        ? [`gate.human_verified:${flow.id}`, `gate.unavailable:${flow.id}`]
        : [
            `agents_ask.card.proposed:${flow.cardId}`,
            `agents_ask.resolution.expired:${flow.cardId}`,
            ...receiver.resolutionKeys(flow.id as string),
          ];
    const ids = keys.reduce((n, key) => n + receiver.webhookIds(key).size, 0);
    const events = keys.filter((key) => receiver.webhookIds(key).size > 0).length;
    // Each event under one webhook-id; for a card, one resolution at most.
    const resolutions = flow.kind === "agent" ? receiver.resolutionKeys(flow.id as string).size : 0;
    duplicates += ids - events + Math.max(0, resolutions - 1);
  }
  return {
    fault,
    answered: answered.length,
    readable,
    expected: expecting.length,
    deliveredOnce,
    duplicates,
    lost,
    redeliveries,
    unanswered: flows.filter((f) => f.unanswered).length,
    failedFlows: flows.filter((f) => f.failure !== undefined).map((f) => `${f.kind}: ${f.failure}`),
    retries: flows.reduce((n, f) => n + f.retries, 0),
  };
}

function violationsOf(row: FaultRow): string[] {
  const found: string[] = [];
  if (row.readable < row.answered)
    found.push(`${row.fault}: ${row.answered - row.readable} of ${row.answered} answered ids not readable`);
  if (row.lost > 0) found.push(`${row.fault}: ${row.lost} terminal events lost`);
  if (row.duplicates > 0) found.push(`${row.fault}: ${row.duplicates} events delivered under a second webhook-id`);
  if (row.deliveredOnce + row.lost < row.expected)
    found.push(
      `${row.fault}: ${row.expected - row.deliveredOnce - row.lost} terminal events not delivered exactly once`,
    );
  for (const failure of row.failedFlows) found.push(`${row.fault}: a flow failed: ${failure}`);
  return found;
}

const seconds = (value: number | undefined) => (value === undefined ? "-" : value.toFixed(1));

function summarise(row: FaultRow): string {
  return (
    `answered ${row.answered}, readable ${row.readable}, events expected ${row.expected}, once ${row.deliveredOnce}, ` +
    `duplicates ${row.duplicates}, lost ${row.lost}, redeliveries ${row.redeliveries}, unanswered ${row.unanswered}, failed flows ${row.failedFlows.length}, retries ${row.retries}`
  );
}

/** The invariants as a table: one row per fault, then every flow of the run. */
export function formatTable(report: FaultReport): string {
  const header = [
    "fault",
    "answered ids",
    "readable",
    "terminal expected",
    "delivered once",
    "duplicates",
    "lost",
    "redelivered",
    "unanswered",
    "failed flows",
    "retries",
    "fault→ready s",
    "fault→flows s",
  ];
  const line = (row: FaultRow) => [
    row.fault,
    String(row.answered),
    String(row.readable),
    String(row.expected),
    String(row.deliveredOnce),
    String(row.duplicates),
    String(row.lost),
    String(row.redeliveries),
    String(row.unanswered),
    String(row.failedFlows.length),
    String(row.retries),
    seconds(row.readySeconds),
    seconds(row.firstFlowSeconds),
  ];
  const cells = [header, ...report.rows.map(line), line(report.total)];
  const widths = header.map((_, i) => Math.max(...cells.map((row) => (row[i] as string).length)));
  const render = (row: string[]) =>
    row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] as number) : cell.padStart(widths[i] as number))).join("  ");
  const rule = widths.map((w) => "-".repeat(w)).join("  ");
  return [render(header), rule, ...report.rows.map((row) => render(line(row))), rule, render(line(report.total))].join(
    "\n",
  );
}
