import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { classifierFromEnvironment, createClassifierClient } from "../src/trust-layer/classifier-client.ts";
import { screenProposal } from "../src/trust-layer/screen.ts";
import { facts, proposal, requestId, text } from "./support/proposals.ts";

type Behaviour = (
  body: { request_id: string | null; texts: { path: string; text: string }[] },
  response: ServerResponse,
) => void;

/** A real classifier on 127.0.0.1 whose behaviour each test chooses by path. */
const behaviours: Record<string, Behaviour> = {
  "/clean": (_, response) => response.end(JSON.stringify({ violations: [] })),
  "/rejecting": (body, response) => {
    const flagged = body.texts.find((item) => item.text.includes("urgent"));
    response.end(
      JSON.stringify({
        violations:
          flagged === undefined
            ? []
            : [
                {
                  path: flagged.path,
                  severity: "error",
                  explanation: "Pressure to act at once is a scam pattern.",
                  fix: "Remove the urgency.",
                },
              ],
      }),
    );
  },
  "/cautioning": (body, response) =>
    response.end(JSON.stringify({ violations: [{ path: body.texts[0]?.path, severity: "warning" }] })),
  "/slow": (_, response) => {
    setTimeout(() => response.end(JSON.stringify({ violations: [] })), 2_000).unref();
  },
  "/failing": (_, response) => {
    response.statusCode = 500;
    response.end("upstream broke");
  },
  "/malformed": (_, response) => response.end("{not json"),
  "/unknown-path": (_, response) =>
    response.end(JSON.stringify({ violations: [{ path: "/elsewhere", severity: "error" }] })),
};
const received: { url: string; body: unknown }[] = [];

let server: ReturnType<typeof createServer>;
let base: string;
beforeAll(async () => {
  server = createServer((request: IncomingMessage, response: ServerResponse) => {
    let raw = "";
    request.on("data", (chunk) => (raw += chunk));
    request.on("end", () => {
      const body = JSON.parse(raw);
      received.push({ url: request.url ?? "", body });
      response.setHeader("content-type", "application/json");
      behaviours[request.url ?? ""]?.(body, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const clean = proposal([text("Lunch with the team"), facts(["When", "Friday 12:30"])]);
const client = (path: string, extra: Partial<Parameters<typeof createClassifierClient>[0]> = {}) =>
  createClassifierClient({ url: `${base}${path}`, timeoutMs: 300, ...extra });

describe("the classifier", () => {
  it("receives the card's visible texts with their paths and the request_id", async () => {
    const result = await screenProposal(clean, { classifier: client("/clean") });
    expect(result.kind).toBe("accepted");
    expect(received.at(-1)).toEqual({
      url: "/clean",
      body: {
        request_id: requestId,
        texts: [
          { path: "/action/summary_title", text: "Approve the team offsite booking" },
          { path: "/action/category", text: "travel" },
          { path: "/adaptive_card_payload/body/0/text", text: "Lunch with the team" },
          { path: "/adaptive_card_payload/body/1/facts/0/title", text: "When" },
          { path: "/adaptive_card_payload/body/1/facts/0/value", text: "Friday 12:30" },
        ],
      },
    });
  });

  it("its errors reject the card as classifier violations", async () => {
    const result = await screenProposal(proposal([text("This is urgent, approve now")]), {
      classifier: client("/rejecting"),
    });
    expect(result).toEqual({
      kind: "rejected",
      violations: [
        {
          source: "classifier",
          type: "classifier_flagged",
          path: "/adaptive_card_payload/body/0/text",
          severity: "error",
          value: "This is urgent, approve now",
          explanation: "Pressure to act at once is a scam pattern.",
          fix: "Remove the urgency.",
        },
      ],
    });
  });

  it("its warnings are kept with the accepted card", async () => {
    const result = await screenProposal(clean, { classifier: client("/cautioning") });
    expect(
      result.kind === "accepted" && result.warnings.map((warning) => [warning.type, warning.path, warning.severity]),
    ).toEqual([["classifier_flagged", "/action/summary_title", "warning"]]);
  });

  it("is not asked about a card the local rules reject", async () => {
    const before = received.length;
    const result = await screenProposal(proposal([text("Verified by Agents Ask")]), { classifier: client("/slow") });
    expect(result.kind).toBe("rejected");
    expect(received.length).toBe(before);
  });

  it.each([
    ["/slow", "timeout"],
    ["/failing", "failed"],
    ["/malformed", "malformed"],
    ["/unknown-path", "malformed"],
  ])("%s: the layer is unavailable (%s), retryable with the same request_id", async (path, reason) => {
    const result = await screenProposal(clean, { classifier: client(path) });
    expect(result).toEqual({
      kind: "unavailable",
      retryable: true,
      nextStep: "Retry the same inquire with the same request_id in a few seconds; nothing was queued.",
      reason,
    });
  });

  it("a refused connection is unavailable too", async () => {
    const closed = createClassifierClient({ url: "http://127.0.0.1:1/classify", timeoutMs: 300 });
    expect(await screenProposal(clean, { classifier: closed })).toMatchObject({
      kind: "unavailable",
      reason: "failed",
    });
  });
});

describe("the circuit breaker", () => {
  it("opens after consecutive failures, answers at once while open, and closes after a good trial", async () => {
    let now = 1_000_000;
    let path = "/failing";
    const breaker = createClassifierClient({
      url: `${base}/dynamic`,
      timeoutMs: 300,
      failureThreshold: 3,
      openMs: 10_000,
      now: () => now,
    });
    behaviours["/dynamic"] = (body, response) => behaviours[path]?.(body, response);
    const calls = () => received.filter((call) => call.url === "/dynamic").length;
    const screen = () => screenProposal(clean, { classifier: breaker });

    for (let attempt = 0; attempt < 3; attempt++) expect(await screen()).toMatchObject({ reason: "failed" });
    expect(calls()).toBe(3);
    expect(await screen()).toMatchObject({ kind: "unavailable", reason: "circuit_open" });
    now += 9_999;
    expect(await screen()).toMatchObject({ reason: "circuit_open" });
    expect(calls()).toBe(3);

    now += 1;
    expect(await screen()).toMatchObject({ reason: "failed" });
    expect(calls()).toBe(4);
    expect(await screen()).toMatchObject({ reason: "circuit_open" });

    now += 10_000;
    path = "/clean";
    expect((await screen()).kind).toBe("accepted");
    expect((await screen()).kind).toBe("accepted");
    expect(calls()).toBe(6);
  });

  it("lets one trial through at a time while half-open", async () => {
    let now = 0;
    const breaker = createClassifierClient({
      url: `${base}/failing`,
      timeoutMs: 300,
      failureThreshold: 1,
      openMs: 100,
      now: () => now,
    });
    await screenProposal(clean, { classifier: breaker });
    now = 100;
    const [first, second] = await Promise.all([
      screenProposal(clean, { classifier: breaker }),
      screenProposal(clean, { classifier: breaker }),
    ]);
    expect([first, second].map((result) => result.kind === "unavailable" && result.reason).sort()).toEqual([
      "circuit_open",
      "failed",
    ]);
  });
});

describe("configuration", () => {
  it("no URL, no classifier", () => {
    expect(classifierFromEnvironment({})).toBeUndefined();
  });
  it("reads the timeout as 800ms, 2s or milliseconds and refuses anything else", async () => {
    const slow = classifierFromEnvironment({
      AGENTLINK_CLASSIFIER_URL: `${base}/slow`,
      AGENTLINK_CLASSIFIER_TIMEOUT: "200ms",
    });
    expect(await screenProposal(clean, { classifier: slow })).toMatchObject({ reason: "timeout" });
    expect(
      classifierFromEnvironment({ AGENTLINK_CLASSIFIER_URL: `${base}/clean`, AGENTLINK_CLASSIFIER_TIMEOUT: "2s" }),
    ).toBeDefined();
    expect(() =>
      classifierFromEnvironment({ AGENTLINK_CLASSIFIER_URL: `${base}/clean`, AGENTLINK_CLASSIFIER_TIMEOUT: "soon" }),
    ).toThrow();
    expect(() => classifierFromEnvironment({ AGENTLINK_CLASSIFIER_URL: "not a url" })).toThrow();
  });
});
