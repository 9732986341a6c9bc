import { Agent, createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { fromBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { connect } from "@nats-io/transport-node";
import { consoleTransport } from "@svc/local-mesh/console-client";
import { notificationSubject } from "@svc/platform";
import { AccountConsoleService, SandboxBehavior } from "@svc/proto/account/v1/account_pb.js";
import { Environment } from "@svc/proto/common/v1/caller_pb.js";
import { ConsoleService, KeyType } from "@svc/proto/console/v1/console_pb.js";
import { GateConsoleService, GateType } from "@svc/proto/gate/v1/gate_pb.js";
import { RequestChangedSchema } from "@svc/proto/gate/v1/request_watch_pb.js";
import { ensureChromiumInstalled, launchChromium } from "../harness/chromium.ts";
import { SoftwareAuthenticator } from "../harness/software-passkey.ts";
import { median, startBenchMesh } from "./bench-infrastructure.ts";

/**
 * `<svc-verify>` in headless Chromium on a partner's page (its own origin, the e2e test's strict CSP),
 * through the real gateway, gate, account and NATS. One result line, `widget-wake`. Each round a new
 * silent sandbox human (it never answers by itself, and is new so that Recent Presence cannot pass it)
 * is named by a new element; once the element's `pending` event fired and its status long-poll is held,
 * this process confirms as that human through the app API, with the passkey it registered there.
 * `widget_p99_ms` is the 99th percentile from gate's RequestChanged notification of the confirmation
 * (heard by this process as the gateway hears it, right after the commit) to the `svc:gate-status`
 * `completed` event in the page (`performance.timeOrigin + performance.now()` there, in the listener).
 * Alternating with those rounds, a plain HTTP client (node:http, the same site key and Origin) holds
 * `GET /verification/status?wait_seconds=25` for a request confirmed the same way: `status_p99_ms` is
 * from the same notification to its whole answer. `ratio` = widget p99 / status p99 (goal: at most 3).
 * The page's and this process's clocks are both a fixed mapping of the machine's monotonic clock to wall
 * time; their offset is measured by the round trip of the shortest of many evaluations, before and after
 * the rounds, reported (`clock_offset_ms`, `clock_offset_uncertainty_ms`), and subtracted.
 * Run: node test/bench/widget.bench.ts
 */
type CreationOptions = Parameters<SoftwareAuthenticator["register"]>[0];
type RequestOptions = Parameters<SoftwareAuthenticator["assert"]>[0];

const rounds = 100;
const warmUp = 10;
/** A wait after the element's pending event (or the plain client's request) by which its long-poll is held. */
const holdSettleMs = 50;

const mesh = await startBenchMesh(["signing", "account", "gate"]);
const nc = await connect({ servers: mesh.natsUrl });
const chromiumPath = await ensureChromiumInstalled(() => {});
const browser = await launchChromium(chromiumPath);
const shop = createServer();
try {
  // The links and passkey assertions name the gateway as the page and this process reach it.
  await mesh.restart("gateway", { GATEWAY_PUBLIC_ORIGIN: mesh.gatewayUrl });
  await mesh.restart("gate", { GATE_PASSKEY_ORIGIN: mesh.gatewayUrl });
  const gatewayOrigin = new URL(mesh.gatewayUrl).origin;

  await new Promise<void>((resolve) => shop.listen(0, "127.0.0.1", resolve));
  const shopOrigin = `http://127.0.0.1:${(shop.address() as AddressInfo).port}`;

  const transport = consoleTransport(mesh.consoleUrl, mesh.consoleToken);
  const operators = createClient(ConsoleService, transport);
  const humans = createClient(AccountConsoleService, transport);
  const { organizationId } = await operators.createOrganization({ name: "Bench Widget Shop" });
  const newKey = (type: KeyType, allowedOrigins: string[]) =>
    operators.createKey({
      organizationId,
      environment: Environment.DEVELOPMENT,
      type,
      allowedOrigins,
      allowedGates: [],
    });
  const site = await newKey(KeyType.SITE, [shopOrigin]);
  const secret = await newKey(KeyType.SECRET, []);
  // Every round calls from one IP with one site key, far above its per-minute and per-IP limits.
  for (const bucket of ["per_minute", "per_ip", "daily"])
    await operators.setKeyLimits({ keyId: site.keyId, bucket, limit: 1_000_000 });
  await createClient(GateConsoleService, transport).createGate({
    organizationId,
    environment: Environment.DEVELOPMENT,
    key: "plain",
    type: GateType.HUMAN,
    status: "active",
  });

  const keepAlive = new Agent({ keepAlive: true });
  const call = (
    method: "GET" | "POST",
    path: string,
    input: Record<string, unknown>,
    credential: string,
    origin?: string,
  ) =>
    new Promise<{ body: Record<string, unknown>; at: number }>((resolve, reject) => {
      const url = new URL(`/v1${path}`, mesh.gatewayUrl);
      if (method === "GET") for (const [k, v] of Object.entries(input)) url.searchParams.set(k, String(v));
      const body = method === "POST" ? JSON.stringify(input) : undefined;
      const headers: Record<string, string | number> = { authorization: `Bearer ${credential}` };
      if (origin) headers.origin = origin;
      if (body !== undefined)
        Object.assign(headers, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      const sent = request(url, { method, agent: keepAlive, headers }, (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (c: Buffer) => chunks.push(c));
        response.on("end", () => {
          const at = wallClock();
          const parsed = JSON.parse(Buffer.concat(chunks).toString());
          if (response.statusCode !== 200 || parsed.data?.error)
            reject(new Error(`${method} ${path}: ${response.statusCode} ${Buffer.concat(chunks)}`));
          else resolve({ body: parsed.data?.data ?? parsed.data, at });
        });
      });
      sent.on("error", reject);
      sent.end(body);
    });

  /** A silent sandbox human, signed in to the app with a passkey registered there: it confirms when told to. */
  const silentHuman = async () => {
    const human = await humans.createSandboxHuman({
      environment: Environment.DEVELOPMENT,
      behavior: SandboxBehavior.SILENT,
    });
    const { sessionToken } = await operators.mintDevSession({ issuer: human.issuer, subject: human.subject });
    const authenticator = SoftwareAuthenticator.create();
    const begun = (await call("POST", "/app/passkeys/begin-registration", {}, sessionToken)).body;
    await call(
      "POST",
      "/app/passkeys/finish-registration",
      {
        ceremony_id: begun.ceremony_id,
        response: authenticator.register(begun.options as CreationOptions, mesh.gatewayUrl),
      },
      sessionToken,
    );
    const confirm = async (requestId: string) => {
      const opened = (await call("POST", "/app/requests/open", { request_id: requestId }, sessionToken)).body;
      const confirmed = await call(
        "POST",
        "/app/requests/confirm",
        {
          request_id: requestId,
          ceremony_id: opened.ceremony_id,
          response: authenticator.assert(opened.options as RequestOptions, mesh.gatewayUrl),
        },
        sessionToken,
      );
      if (confirmed.body.status !== "completed") throw new Error(`confirm answered ${confirmed.body.status}`);
    };
    return { svcUserId: human.svcUserId, confirm };
  };
  const people: Awaited<ReturnType<typeof silentHuman>>[] = [];
  while (people.length < 2 * (rounds + warmUp))
    people.push(...(await Promise.all(Array.from({ length: 10 }, silentHuman))));

  const config = (await call("GET", "/sdk/partner-config", { gate: "plain" }, secret.key)).body;
  const widget = config.widget as { url: string; integrity: string };
  // The partner's page, as the e2e test serves it: the versioned script with its integrity hash, a strict CSP.
  shop.on("request", (_req, res) => {
    res
      .writeHead(200, {
        "content-type": "text/html; charset=utf-8",
        "content-security-policy": `default-src 'none'; script-src ${gatewayOrigin}; connect-src ${gatewayOrigin}; img-src ${gatewayOrigin}; style-src 'none'; form-action 'self'; base-uri 'none'`,
      })
      .end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop checkout</title>
<script src="${widget.url}" integrity="${widget.integrity}" crossorigin="anonymous"></script></head>
<body><main><h1>Checkout</h1></main></body></html>`);
  });

  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const pendingSeen = new Map<string, (requestId: string) => void>();
  const finalSeen = new Map<string, () => void>();
  // Told after the page recorded the instant, so this call's own cost is outside the measurement.
  await page.exposeFunction("benchGateStatus", (status: string, requestId: string, svcUserId: string) => {
    if (status === "pending") pendingSeen.get(svcUserId)?.(requestId);
    else finalSeen.get(requestId)?.();
  });
  await page.addInitScript(() => {
    const seen: { status: string; requestId: string; at: number }[] = [];
    Object.assign(window, { benchSeen: seen });
    document.addEventListener("svc:gate-status", (event) => {
      const at = performance.timeOrigin + performance.now();
      const { status, request_id } = (event as CustomEvent<{ status: string; request_id: string }>).detail;
      seen.push({ status, requestId: request_id, at });
      const svcUserId = (event.target as Element).getAttribute("svc-user-id") ?? "";
      void (window as unknown as { benchGateStatus: (...a: string[]) => Promise<void> }).benchGateStatus(
        status,
        request_id,
        svcUserId,
      );
    });
  });
  await page.goto(`${shopOrigin}/`);

  const clockOffset = async () => {
    let best = { rtt: Number.POSITIVE_INFINITY, offset: 0 };
    for (let i = 0; i < 50; i++) {
      const sent = wallClock();
      const pageAt = await page.evaluate(() => performance.timeOrigin + performance.now());
      const back = wallClock();
      if (back - sent < best.rtt) best = { rtt: back - sent, offset: pageAt - (sent + back) / 2 };
    }
    return best;
  };
  const offsetBefore = await clockOffset();

  const heardAt = new Map<string, number>();
  nc.subscribe(notificationSubject("events", "gate.request_changed"), {
    callback: (_error, message) => {
      const { requestId, status } = fromBinary(RequestChangedSchema, message.data);
      if (status === "completed") heardAt.set(requestId, wallClock());
    },
  });
  const heard = async (requestId: string) => {
    // The answer may reach this process before its own copy of the notification: a round trip to the server delivers it.
    if (!heardAt.has(requestId)) await nc.flush();
    const at = heardAt.get(requestId);
    if (at === undefined) throw new Error("the notification was not heard");
    return at;
  };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  const widgetRound = async (person: (typeof people)[number]) => {
    const pending = new Promise<string>((resolve) => pendingSeen.set(person.svcUserId, resolve));
    await page.evaluate(
      ({ siteKey, svcUserId }) => {
        document.querySelector("svc-verify")?.remove();
        const element = document.createElement("svc-verify");
        element.setAttribute("sitekey", siteKey);
        element.setAttribute("gate", "plain");
        element.setAttribute("svc-user-id", svcUserId);
        document.querySelector("main")?.append(element);
      },
      { siteKey: site.key, svcUserId: person.svcUserId },
    );
    const requestId = await pending;
    pendingSeen.delete(person.svcUserId);
    const done = new Promise<void>((resolve) => finalSeen.set(requestId, resolve));
    await sleep(holdSettleMs);
    await person.confirm(requestId);
    await done;
    finalSeen.delete(requestId);
    return { requestId, heard: await heard(requestId) };
  };

  const statusRound = async (person: (typeof people)[number]) => {
    const grant = (await call("POST", "/sdk/create-session", {}, site.key, shopOrigin)).body
      .anchor_grant_token as string;
    const link = await call(
      "POST",
      "/sdk/create-verification-link",
      { gate: "plain", svc_user_id: person.svcUserId },
      grant,
    );
    const requestId = link.body.request_id as string;
    const poll = call("GET", "/verification/status", { request_id: requestId, wait_seconds: 25 }, site.key, shopOrigin);
    await sleep(holdSettleMs);
    await person.confirm(requestId);
    const answer = await poll;
    if (answer.body.status !== "completed") throw new Error(`the long-poll answered ${answer.body.status}`);
    return answer.at - (await heard(requestId));
  };

  const widgetRounds: { requestId: string; heard: number }[] = [];
  const statusWakes: number[] = [];
  for (let round = 0; round < rounds + warmUp; round++) {
    const widgetRun = await widgetRound(people[2 * round]!);
    const statusWake = await statusRound(people[2 * round + 1]!);
    if (round < warmUp) continue;
    widgetRounds.push(widgetRun);
    statusWakes.push(statusWake);
  }
  const offsetAfter = await clockOffset();
  const offset = (offsetBefore.offset + offsetAfter.offset) / 2;

  const seen = await page.evaluate(
    () => (window as unknown as { benchSeen: { status: string; requestId: string; at: number }[] }).benchSeen,
  );
  let eventBeforeHeard = 0;
  const widgetWakes = widgetRounds.map(({ requestId, heard: heardAt }) => {
    const event = seen.find((e) => e.requestId === requestId && e.status === "completed");
    if (!event) throw new Error(`no completed event for ${requestId}`);
    const wake = event.at - offset - heardAt;
    if (wake < 0) eventBeforeHeard++;
    return Math.max(0, wake);
  });
  const p99 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.ceil(values.length * 0.99) - 1]!;
  console.log(
    JSON.stringify({
      name: "widget-wake",
      widget_p99_ms: p99(widgetWakes),
      widget_median_ms: median(widgetWakes),
      status_p99_ms: p99(statusWakes),
      status_median_ms: median(statusWakes),
      ratio: p99(widgetWakes) / p99(statusWakes),
      clock_offset_ms: offset,
      clock_offset_drift_ms: offsetAfter.offset - offsetBefore.offset,
      clock_offset_uncertainty_ms: Math.max(offsetBefore.rtt, offsetAfter.rtt) / 2,
      rounds: widgetWakes.length,
      event_before_heard: eventBeforeHeard,
    }),
  );
  keepAlive.destroy();
} finally {
  await browser.close();
  shop.close();
  await nc.close();
  await mesh.stop();
}

/** This process's wall clock as the page reads its own: a fixed origin plus the monotonic clock, in ms. */
function wallClock(): number {
  return performance.timeOrigin + performance.now();
}
