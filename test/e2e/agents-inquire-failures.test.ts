import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestMesh, type TestMesh } from "../harness/test-mesh.ts";
import { agentBoundToSilentHuman } from "./agent-support.ts";
import { dataError, partnerApi, result } from "./gate-support.ts";

/**
 * The inquire errors that only a failure behind agentlink produces, through the gateway: 502 when the
 * person's lookup fails (the account service stopped), and `trust_layer_unavailable` when the trust layer's
 * classifier cannot answer (a real HTTP classifier on 127.0.0.1, configured into agentlink, that answers 503
 * or is closed). Neither stores a card: the same request_id, sent again once the failure is over, is a
 * new card and not a replay.
 */
describe("agents ask: inquire when what is behind agentlink fails", () => {
  let mesh: TestMesh;
  let api: ReturnType<typeof partnerApi>;
  let agentKey: string;
  let opaqueId: string;
  let person: string;

  /** The classifier: answers "no violations" until a test makes it fail; counts what it is asked. */
  let classifierFails = false;
  let classifierCalls = 0;
  let classifier: Server;

  const action = { summary_title: "Pay invoice 2231 to Acme", category: "payments" };
  const inquire = (body: Record<string, unknown>) =>
    api.post("/agentlink/inquire", { request_id: randomUUID(), opaque_id: opaqueId, action, ...body }, agentKey);
  const checkStatus = (requestId: string) => api.get("/agentlink/check-status", { request_id: requestId }, agentKey);

  beforeAll(async () => {
    classifier = createServer((request, response) => {
      request.resume();
      request.on("end", () => {
        classifierCalls++;
        if (classifierFails) {
          response.writeHead(503).end("overloaded");
          return;
        }
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ violations: [] }));
      });
    });
    await new Promise<void>((resolve) => classifier.listen(0, "127.0.0.1", resolve));
    const { port } = classifier.address() as AddressInfo;
    mesh = await startTestMesh("agents_inquire_failures", {
      only: ["signing", "account", "agentlink"],
      env: { AGENTLINK_CLASSIFIER_URL: `http://127.0.0.1:${port}/classify` },
    });
    api = partnerApi(mesh);
    ({ agentKey, person, opaqueId } = await agentBoundToSilentHuman(mesh, api, {
      organization: "Failing inquirers",
      name: "Pay_Bot",
      categories: ["payments"],
    }));
  });
  afterAll(async () => {
    await mesh?.stop();
    if (classifier?.listening) await new Promise((resolve) => classifier.close(resolve));
  });

  it("answers 502 with a retry hint when the user lookup fails, and stores nothing", async () => {
    await mesh.kill("account");
    const requestId = randomUUID();
    try {
      expect(dataError(await inquire({ request_id: requestId, opaque_id: undefined, svc_user_id: person }))).toEqual({
        statusCode: 502,
        message: expect.stringMatching(/retry/),
      });
      expect(dataError(await checkStatus(requestId)).statusCode).toBe(404);
      // agentlink itself answers: a person named by opaque_id needs no lookup.
      expect(result(await inquire({})).status).toBe("queued");
    } finally {
      await mesh.restart("account");
    }
    const queued = result(await inquire({ request_id: requestId, opaque_id: undefined, svc_user_id: person }));
    expect(queued).toMatchObject({ status: "queued", card_id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(queued.idempotent_replay).toBeUndefined();
  });

  const trustLayerUnavailable = {
    statusCode: 502,
    code: "trust_layer_unavailable",
    message: expect.stringMatching(/retry/),
    retryable: true,
    next_step: "Retry the same inquire with the same request_id in a few seconds; nothing was queued.",
  };

  it("answers trust_layer_unavailable when the classifier fails, and stores nothing", async () => {
    const requestId = randomUUID();
    const callsBefore = classifierCalls;
    classifierFails = true;
    try {
      expect(dataError(await inquire({ request_id: requestId }))).toEqual(trustLayerUnavailable);
    } finally {
      classifierFails = false;
    }
    expect(classifierCalls).toBe(callsBefore + 1);
    expect(dataError(await checkStatus(requestId)).statusCode).toBe(404);

    const queued = result(await inquire({ request_id: requestId }));
    expect(queued.status).toBe("queued");
    expect(queued.idempotent_replay).toBeUndefined();
    expect(classifierCalls).toBe(callsBefore + 2);
  });

  it("answers trust_layer_unavailable when nothing listens at the classifier's address", async () => {
    await new Promise((resolve) => classifier.close(resolve));
    const requestId = randomUUID();
    expect(dataError(await inquire({ request_id: requestId }))).toEqual(trustLayerUnavailable);
    expect(dataError(await checkStatus(requestId)).statusCode).toBe(404);
  });
});
