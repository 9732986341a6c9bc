import { type Link, type StatusRecord, type WidgetApi, WidgetError } from "./api.ts";

/** The `detail` of `svc:gate-status` (decisions.md, "The widget"). */
export interface GateStatusDetail {
  status: string;
  request_id: string;
  token: string | null;
  expires_at: string | null;
  age_verdict?: string;
  via?: "precheck";
}

export interface FlowInput {
  gate: string;
  partnerUserId?: string;
  partnerUserRef?: string;
  svcUserId?: string;
  notarize: boolean;
  returnUrl?: string;
  metadata?: Record<string, unknown>;
}

export interface FlowHooks {
  /** The request waits for the person: show its links. */
  shown(link: Link, gateType: string): void;
  /** The status changed (the first call is `pending`, or a pre-check's `pass`). */
  changed(detail: GateStatusDetail): void;
  /** The flow is over when this says so (the element left the page, or started again). */
  cancelled(): boolean;
}

const finalStatuses = new Set(["completed", "pass", "failed", "expired", "not_found"]);
/** The longest hold the status operation grants. */
const longPollSeconds = 25;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const detailOf = (requestId: string, record: StatusRecord): GateStatusDetail => ({
  status: record.status,
  request_id: requestId,
  token: record.token ?? null,
  expires_at: record.expires_at ?? null,
  ...(record.age_verdict ? { age_verdict: record.age_verdict } : {}),
});

/**
 * One gate check: read the gate, run the Recent Presence pre-check when the page names the person,
 * otherwise (or when it does not pass) create the request, as the pre-check's presence ceremony when
 * there was one, and wait for its outcome. Throws a `WidgetError` when the service refuses.
 */
export async function runGateCheck(api: WidgetApi, input: FlowInput, hooks: FlowHooks): Promise<void> {
  const config = await api.partnerConfig(input.gate);
  if (config.status !== "active") throw new Error("gate not active");
  // The gate's switch decides: neither notarize nor enroll can turn the offer on when it is off.
  const notarize = input.notarize && config.notarize_offered;
  const person = {
    gate: input.gate,
    ...(input.partnerUserRef ? { partner_user_ref: input.partnerUserRef } : {}),
    ...(input.svcUserId ? { svc_user_id: input.svcUserId } : {}),
    ...(input.returnUrl ? { return_url: input.returnUrl } : {}),
  };
  const session = () => api.createSession(input.partnerUserId, input.metadata);

  let parent: string | undefined;
  // A request that secures an account, or an Age Gate's, always runs a ceremony: a pre-check could not pass.
  if ((input.partnerUserRef || input.svcUserId) && !notarize && config.gate_type === "human") {
    const preCheck = await api.createLink(await session(), person);
    // Without a parent, only a Recent Presence pass is a presence request (decisions.md, sdk_type).
    if (preCheck.sdk_type === "presence") {
      return hooks.changed({
        status: "pass",
        request_id: preCheck.request_id,
        token: null,
        expires_at: preCheck.expires_at,
        via: "precheck",
      });
    }
    parent = preCheck.request_id;
  }
  if (hooks.cancelled()) return;
  const link = await api.createLink(await session(), {
    ...person,
    ...(notarize ? { notarize: true } : {}),
    ...(parent ? { parent_request_id: parent } : {}),
  });
  hooks.shown(link, config.gate_type);
  hooks.changed({ status: "pending", request_id: link.request_id, token: null, expires_at: link.expires_at });
  await waitForOutcome(api, link.request_id, hooks);
}

const backoff = (ms: number) => Math.min(Math.max(ms * 2, 1000), 8000);

/**
 * Asks for the status until it is final: long-polls, each held by the service until the status changes.
 * A service that does not hold (an answer back at once) or fails is asked again after a growing pause;
 * one that refuses `wait_seconds` (400) is read without it from then on.
 */
async function waitForOutcome(api: WidgetApi, requestId: string, hooks: FlowHooks): Promise<void> {
  let last = "pending";
  let pauseMs = 0;
  let longPoll = true;
  while (!hooks.cancelled()) {
    if (pauseMs > 0) await sleep(pauseMs);
    const started = performance.now();
    let record: StatusRecord;
    try {
      record = await api.status(requestId, longPoll ? longPollSeconds : 0);
    } catch (error) {
      if (error instanceof WidgetError && error.statusCode === 400) longPoll = false;
      pauseMs = backoff(pauseMs);
      continue;
    }
    if (hooks.cancelled()) return;
    if (record.status !== last && record.status !== "error") {
      last = record.status;
      hooks.changed(detailOf(requestId, record));
    }
    if (finalStatuses.has(record.status)) return;
    pauseMs = record.status === "error" || performance.now() - started < 1000 ? backoff(pauseMs) : 0;
  }
}
