import type { JsonObject } from "@bufbuild/protobuf";
import { type Clock, type CommittedEvent, currentTraceContext, type EventBus, pushTriggerRow } from "@svc/platform";
import { PushKind } from "@svc/proto/account/v1/account_pb.js";
import type { PartnerCaller } from "../caller.ts";
import { type SandboxVerdict, sandboxFastPathMs } from "../ceremony/sandbox.ts";
import { eventMetadata } from "../events/gate-events.ts";
import type { GateFactsLookup } from "../gates/gate-facts.ts";
import type { PartnerRefs } from "../partner-refs.ts";
import { refuse } from "../refusal.ts";
import type { SessionFactsLookup } from "../sessions/session-facts.ts";
import { blockingUser } from "./blocking-rule.ts";
import type { CreatedLink } from "./created-link.ts";
import { type IdempotentCreates, sealFlowSecret, tokenHash } from "./idempotent-creates.ts";
import { presencePassReadableMs, requestLifetimeMs } from "./lifetimes.ts";
import { presenceLookup, presenceSince } from "./recent-presence.ts";
import { newFlowSecret, newRequestId, requestIdForm, secretHash } from "./request-ids.ts";
import type { RequestWriter } from "./request-writer.ts";

export interface LinkInput {
  gate: string;
  returnUrl: string;
  mode: string;
  svcUserId: string;
  partnerUserRef: string;
  parentRequestId: string;
  metadata: JsonObject | undefined;
  notarize: boolean;
  /** The gateway's scoped Idempotency-Key hash; empty without a key (idempotent-creates.ts). */
  idempotencyToken: string;
}

/** What the person's side learned about `svc_user_id` before the transaction (account calls stay outside it). */
export interface HumanFacts {
  devices: number;
  /** How the human answers when they are a sandbox human who answers (development only); absent otherwise. */
  sandbox?: SandboxVerdict | undefined;
}

/** What the person's lock screen shows: nothing of the partner's. */
const pushTitle = "A verification request is waiting for you";

/** decisions.md: `private` unless `svc_user_id` is given, then `linked-account`. */
const modeFor = (mode: string, svcUserId: string): CreatedLink["authMode"] =>
  mode === "private" || mode === "linked-account" ? mode : svcUserId === "" ? "private" : "linked-account";

const refusals = {
  unauthenticated: () => refuse("unauthenticated", "the grant token is invalid, expired or already used"),
  no_active_gate: (gate: string, environment: string) =>
    refuse("invalid", `no active gate ${JSON.stringify(gate)} in the ${environment} environment`),
  gate_not_allowed: (gate: string) => refuse("forbidden", `gate ${JSON.stringify(gate)} is not allowed for this key`),
  conflict: () =>
    refuse("conflict", "the same user already has a pending request for this gate; revoke it or wait for it to end"),
};

/**
 * create-verification-link in one round trip. The rules (the 409 rule's user, Recent Presence, the
 * allowed gates) are decided here from facts that never change, the session's and the gate's; the
 * request writer then applies them atomically against what can change (create-verification-requests.sql): of any
 * number of concurrent calls with one token one proceeds and the others find it used; the gate must
 * be active and no request may block; a recent ceremony makes it a pass. A refused call writes
 * nothing, so it consumes nothing (spec "Grant token": rejected call → unused).
 */
export async function createLink(
  deps: {
    writer: RequestWriter;
    sessions: SessionFactsLookup;
    gates: GateFactsLookup;
    clock: Clock;
    bus: Pick<EventBus, "subjectPrefix">;
    refs: PartnerRefs;
    presenceWindowMs: number;
    idempotent: IdempotentCreates;
  },
  caller: PartnerCaller,
  input: LinkInput,
  human: HumanFacts,
): Promise<CreatedLink & { pushEvent: CommittedEvent | null }> {
  const { clock, refs } = deps;
  const session = await deps.sessions.of(caller.credentialId);
  if (!session || session.organization_id !== caller.organizationId || session.environment !== caller.environment)
    throw refusals.unauthenticated();
  const organizationId = session.organization_id;
  const gate = await deps.gates.of(organizationId, session.environment, input.gate);

  const user = blockingUser({
    gate: input.gate,
    partnerUserRef: input.partnerUserRef,
    // The session keeps only a hash of partner_user_id; the rule needs to know whether it was given.
    sessionPartnerUserId: session.partner_user_hash ? "given" : undefined,
    sessionCredentialKind: session.credential_kind,
  });
  const refHash = input.partnerUserRef === "" ? null : refs.hash(organizationId, input.partnerUserRef);
  const blockingHash = user === undefined ? null : (refHash ?? session.partner_user_hash);
  const notarizeOffered =
    input.notarize && input.partnerUserRef !== "" && gate !== undefined && (await deps.gates.offersNotarize(gate.id));
  const lookup = presenceLookup({
    svcUserId: input.svcUserId,
    refHash,
    securesAccount: notarizeOffered,
    ageGate: gate?.type === "age",
    presenceCeremony: input.parentRequestId !== "",
  });

  const now = clock.now();
  const requestId = newRequestId();
  const flowSecret = newFlowSecret();
  const authMode = modeFor(input.mode, input.svcUserId);
  const expiresAt = new Date(now.getTime() + requestLifetimeMs);
  const { outcome, pushEvent } = await deps.writer.write({
    sessionId: session.id,
    organizationId,
    environment: session.environment,
    gate,
    gateAllowed: gate !== undefined && (session.allowed_gates.length === 0 || session.allowed_gates.includes(gate.key)),
    requestId,
    flowSecretHash: secretHash(flowSecret),
    blockingHash,
    parentRequestId: requestIdForm.test(input.parentRequestId) ? input.parentRequestId : null,
    presenceHumanId: lookup?.by === "human" ? lookup.svcUserId : null,
    presenceRefHash: lookup?.by === "reference" ? lookup.refHash : null,
    presenceSince: presenceSince(now, deps.presenceWindowMs),
    refHash,
    refSealed: input.partnerUserRef === "" ? null : refs.seal(requestId, input.partnerUserRef),
    svcUserId: input.svcUserId === "" ? null : input.svcUserId,
    mode: authMode,
    sdkType: input.parentRequestId === "" ? "signal" : "presence",
    notarizeOffered,
    returnUrl: input.returnUrl === "" ? null : input.returnUrl,
    metadata: eventMetadata(session.metadata, input.metadata) ?? null,
    pushedToDevices: human.devices,
    now,
    expiresAt,
    passExpiresAt: new Date(now.getTime() + presencePassReadableMs),
    idempotencyTokenHash: input.idempotencyToken === "" ? null : tokenHash(input.idempotencyToken),
    flowSecretSealed: input.idempotencyToken === "" ? null : sealFlowSecret(refs, requestId, flowSecret),
    traceContext: currentTraceContext(),
    ...(human.sandbox && {
      sandbox: { verdict: human.sandbox, answerAt: new Date(now.getTime() + sandboxFastPathMs) },
    }),
    pushTrigger:
      input.svcUserId === ""
        ? null
        : pushTriggerRow(
            clock,
            deps.bus,
            { kind: PushKind.GATE_REQUEST, itemId: requestId, title: pushTitle, expiresAt },
            input.svcUserId,
          ),
  });
  if (outcome === "unauthenticated" && input.idempotencyToken !== "") {
    // A retry of a create that did consume the token: it answers that create's request again.
    const created = await deps.idempotent.createdWith(session.id, input.idempotencyToken);
    if (created) return { ...created, pushEvent: null };
  }
  if (outcome === "unauthenticated" || outcome === "conflict") throw refusals[outcome]();
  if (outcome === "no_active_gate" || !gate) throw refusals.no_active_gate(input.gate, session.environment);
  if (outcome === "gate_not_allowed") throw refusals.gate_not_allowed(gate.key);

  const passed = outcome === "pass";
  return {
    requestId,
    status: outcome,
    flowSecret,
    createdAt: now,
    expiresAt: new Date(now.getTime() + (passed ? presencePassReadableMs : requestLifetimeMs)),
    pushedToDevices: passed ? 0 : human.devices,
    sdkType: passed || input.parentRequestId !== "" ? "presence" : "signal",
    authMode,
    gate,
    organizationId,
    notarizeOffered,
    /** The person's push trigger, committed with the request, for the relay to publish at once. */
    pushEvent,
  };
}
