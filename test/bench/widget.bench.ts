import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fromBinary } from "@bufbuild/protobuf";
import { connect } from "@nats-io/transport-node";
import { notificationSubject } from "@svc/platform";
import { KeyType } from "@svc/proto/console/v1/console_pb.js";
import { RequestChangedSchema } from "@svc/proto/gate/v1/request_watch_pb.js";
import { ensureChromiumInstalled, launchChromium } from "../harness/chromium.ts";
import { SoftwareAuthenticator } from "../harness/software-passkey.ts";
import { interleavedRounds, sleep, startBenchMesh } from "./bench-infrastructure.ts";
import { benchPartner } from "./bench-partner.ts";

/**
 * `<svc-verify>` in headless Chromium on a partner's page (its own origin, the e2e test's strict CSP),
 * through the real gateway, gate, account and NATS. One result line, `widget-wake`. Each round a new
 * silent sandbox human (it never answers by itself, and is new so that Recent Presence cannot pass it)
 * is named by a new element; once the element's `pending` event fired and its status long-poll is held,
 * this process confirms as that human through the app API, with the passkey it registered there.
 * A widget wake is from gate's RequestChanged notification of the confirmation (heard by this process as
 * the gateway hears it, right after the commit) to the `svc:gate-status` `completed` event in the page
 * (`performance.timeOrigin + performance.now()` there, in the listener). Taking turns with those in rounds
 * ({@link interleavedRounds}), a plain HTTP client (node:http, the same site key and Origin) holds
 * `GET /verification/status?wait_seconds=25` for a request confirmed the same way: a status wake is from
 * the same notification to its whole answer. `ratio` = the median of the rounds' widget median over status
 * median (goal: at most 3), `p99_ratio` = widget p99 over status p99 over all kept samples (bounded at 6).
 * `widget_cpu_us`, `status_cpu_us`: the server processes' CPU (the mesh, PostgreSQL, NATS; not Chromium) per
 * request, from its creation to its answer. The page's and this process's clocks are both a fixed mapping
 * of the machine's monotonic clock to wall time; their offset is measured by the round trip of the
 * shortest of many evaluations before the rounds and subtracted, and again after them, reported as the
 * drift (`clock_offset_ms`, `clock_offset_drift_ms`, `clock_offset_uncertainty_ms`).
 * Run: node test/bench/widget.bench.ts
 */
type CreationOptions = Parameters<SoftwareAuthenticator["register"]>[0];
type RequestOptions = Parameters<SoftwareAuthenticator["assert"]>[0];

const rounds = 20;
const warmUp = 2;
const perRound = 5;
/** A wait after the element's pending event (or the plain client's request) by which its long-poll is held. */
const holdSettleMs = 50;

const mesh = await startBenchMesh(["signing", "account", "gate"]);
const nc = await connect({ servers: mesh.natsUrl });
const chromiumPath = await ensureChromiumInstalled(() => {});
const browser = await launchChromium(chromiumPath);
const shop = createServer();
const partner = await benchPartner(mesh, "Bench Widget Shop", wallClock);
try {
  // The links and passkey assertions name the gateway as the page and this process reach it.
  await mesh.restart("gateway", { GATEWAY_PUBLIC_ORIGIN: mesh.gatewayUrl });
  await mesh.restart("gate", { GATE_PASSKEY_ORIGIN: mesh.gatewayUrl });
  const gatewayOrigin = new URL(mesh.gatewayUrl).origin;

  await new Promise<void>((resolve) => shop.listen(0, "127.0.0.1", resolve));
  const shopOrigin = `http://127.0.0.1:${(shop.address() as AddressInfo).port}`;

  const { call, operators } = partner;
  // Every round calls from one IP with one site key, far above its per-minute and per-IP limits.
  const site = await partner.key(KeyType.SITE, [shopOrigin]);
  const secret = await partner.key(KeyType.SECRET);
  await partner.plainGate();

  /** A silent sandbox human, signed in to the app with a passkey registered there: it confirms when told to. */
  const silentHuman = async () => {
    const human = await partner.sandboxHuman();
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
  while (people.length < 2 * (rounds + warmUp) * perRound)
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
  let nextPerson = 0;
  let eventBeforeHeard = 0;

  const widgetWake = async () => {
    const person = people[nextPerson++]!;
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
    const eventAt = await page.evaluate(
      (id) =>
        (window as unknown as { benchSeen: { status: string; requestId: string; at: number }[] }).benchSeen.find(
          (e) => e.requestId === id && e.status === "completed",
        )?.at,
      requestId,
    );
    if (eventAt === undefined) throw new Error(`no completed event for ${requestId}`);
    const wake = eventAt - offsetBefore.offset - (await heard(requestId));
    if (wake < 0) eventBeforeHeard++;
    return Math.max(0, wake);
  };

  const statusWake = async () => {
    const person = people[nextPerson++]!;
    const grant = (
      await call("POST", "/sdk/create-session", {}, site.key, {
        origin: shopOrigin,
      })
    ).body.anchor_grant_token as string;
    const link = await call(
      "POST",
      "/sdk/create-verification-link",
      { gate: "plain", svc_user_id: person.svcUserId },
      grant,
    );
    const requestId = link.body.request_id as string;
    const poll = call("GET", "/verification/status", { request_id: requestId, wait_seconds: 25 }, site.key, {
      origin: shopOrigin,
    });
    await sleep(holdSettleMs);
    await person.confirm(requestId);
    const answer = await poll;
    if (answer.body.status !== "completed") throw new Error(`the long-poll answered ${answer.body.status}`);
    return answer.at - (await heard(requestId));
  };

  const measured = await interleavedRounds(
    rounds,
    warmUp,
    { sample: widgetWake, perRound, processes: mesh.serverProcesses },
    { sample: statusWake, perRound, processes: mesh.serverProcesses },
  );
  const offsetAfter = await clockOffset();
  console.log(
    JSON.stringify({
      name: "widget-wake",
      ratio: measured.ratio,
      p99_ratio: measured.arm.p99Ms / measured.baseline.p99Ms,
      widget_median_ms: measured.arm.medianMs,
      status_median_ms: measured.baseline.medianMs,
      widget_p99_ms: measured.arm.p99Ms,
      status_p99_ms: measured.baseline.p99Ms,
      widget_cpu_us: Math.round(measured.arm.cpuUsPerSample),
      status_cpu_us: Math.round(measured.baseline.cpuUsPerSample),
      min_round_ratio: measured.minRoundRatio,
      max_round_ratio: measured.maxRoundRatio,
      clock_offset_ms: offsetBefore.offset,
      clock_offset_drift_ms: offsetAfter.offset - offsetBefore.offset,
      clock_offset_uncertainty_ms: Math.max(offsetBefore.rtt, offsetAfter.rtt) / 2,
      wakes_per_arm: measured.arm.samples.length,
      event_before_heard: eventBeforeHeard,
    }),
  );
} finally {
  partner.close();
  await browser.close();
  shop.close();
  await nc.close();
  await mesh.stop();
}

/** This process's wall clock as the page reads its own: a fixed origin plus the monotonic clock, in ms. */
function wallClock(): number {
  return performance.timeOrigin + performance.now();
}
