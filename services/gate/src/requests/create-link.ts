import type { JsonObject } from "@bufbuild/protobuf";
import type { MikroORM } from "@mikro-orm/postgresql";
import type { Clock } from "@svc/platform";
import type { PartnerCaller } from "../caller.ts";
import { eventMetadata } from "../events/gate-events.ts";
import { acceptsRequests } from "../gates/gate-status.ts";
import { gateFromRow, type Gate, type GateRow } from "../gates/gate-store.ts";
import type { PartnerRefs } from "../partner-refs.ts";
import { Refusal } from "../refusal.ts";
import type { SessionRow } from "../sessions/session-store.ts";
import { blockingUser } from "./blocking-rule.ts";
import { presencePassReadableMs, requestLifetimeMs } from "./lifetimes.ts";
import { presenceLookup, presenceSince, type PresenceLookup } from "./recent-presence.ts";
import { newFlowSecret, newRequestId, requestIdForm, secretHash } from "./request-ids.ts";

export type Mode = "private" | "linked-account";

export interface LinkInput {
  gate: string;
  returnUrl: string;
  mode: string;
  svcUserId: string;
  partnerUserRef: string;
  parentRequestId: string;
  metadata: JsonObject | undefined;
  notarize: boolean;
}

/** What the person's side learned about `svc_user_id` before the transaction (account calls stay outside it). */
export interface HumanFacts {
  devices: number;
}

export interface CreatedLink {
  requestId: string;
  status: "pending" | "pass";
  flowSecret: string;
  expiresAt: Date;
  pushedToDevices: number;
  sdkType: "signal" | "presence";
  authMode: Mode;
  gate: Gate;
}

/** decisions.md: `private` unless `svc_user_id` is given, then `linked-account`. */
export const modeFor = (mode: string, svcUserId: string): Mode =>
  mode === "private" || mode === "linked-account" ? mode : svcUserId === "" ? "private" : "linked-account";

/**
 * create-verification-link in one transaction. The grant token is consumed first with a conditional
 * update, which also locks its session row: of any number of concurrent calls with one token, one
 * holds the lock and the others wait, then find it used. Every refusal after that rolls the
 * transaction back, so a rejected call consumes nothing (spec "Grant token": rejected call → unused).
 */
export async function createLink(
  deps: { orm: MikroORM; clock: Clock; refs: PartnerRefs; presenceWindowMs: number },
  caller: PartnerCaller,
  input: LinkInput,
  human: HumanFacts,
): Promise<CreatedLink> {
  const { clock, refs } = deps;
  const authMode = modeFor(input.mode, input.svcUserId);
  const sdkTypeOfCeremony = input.parentRequestId === "" ? "signal" : "presence";

  return deps.orm.em.fork().transactional(async (em) => {
    const now = clock.now();
    const requestId = newRequestId();
    // One round trip: consume the token (recording the request it creates) and read the gate with it.
    const rows = await em.execute<(SessionRow & { gate: GateRow | null })[]>(
      `with consumed as (
         update sessions set consumed_at = ?, request_id = ? where id = ? and consumed_at is null and revoked_at is null and expires_at > ? returning *)
       select consumed.*, (select to_jsonb(g) from gates g where g.organization_id = consumed.organization_id and g.environment = consumed.environment and g.key = ?) as gate
         from consumed`,
      [now, requestId, caller.credentialId, now, input.gate],
    );
    const session = rows[0];
    if (!session) throw new Refusal("unauthenticated", "the grant token is invalid, expired or already used");

    const gate = session.gate ? gateFromRow(session.gate) : undefined;
    if (!gate || !acceptsRequests(gate.status)) throw new Refusal("invalid", `no active gate ${JSON.stringify(input.gate)} in the ${session.environment} environment`);
    if (session.allowed_gates.length > 0 && !session.allowed_gates.includes(gate.key)) throw new Refusal("forbidden", `gate ${JSON.stringify(gate.key)} is not allowed for this key`);

    const organizationId = session.organization_id;
    const user = blockingUser({
      gate: gate.key,
      partnerUserRef: input.partnerUserRef,
      // The session keeps only a hash of partner_user_id; the rule needs to know whether it was given.
      sessionPartnerUserId: session.partner_user_hash ? "given" : undefined,
      sessionCredentialKind: session.credential_kind,
    });
    const blockingHash = user === undefined ? null : input.partnerUserRef !== "" ? refs.hash(organizationId, input.partnerUserRef) : session.partner_user_hash;
    const parent = requestIdForm.test(input.parentRequestId) ? input.parentRequestId : null;

    if (blockingHash) {
      // Two sessions of one user racing past the check would both create: serialize per user and gate.
      await em.execute(`select pg_advisory_xact_lock(hashtextextended(?, 0))`, [`${organizationId}:${session.environment}:${gate.key}:${blockingHash.toString("base64")}`]);
      const blocking = await em.execute<{ id: string }[]>(
        `select id from requests where organization_id = ? and environment = ? and gate_key = ? and blocking_user_hash = ?
           and status = 'pending' and expires_at > ? and id is distinct from ? limit 1`,
        [organizationId, session.environment, gate.key, blockingHash, now, parent],
      );
      if (blocking[0]) throw new Refusal("conflict", "the same user already has a pending request for this gate; revoke it or wait for it to end");
    }

    const refHash = input.partnerUserRef === "" ? null : refs.hash(organizationId, input.partnerUserRef);
    const notarizeOffered = input.notarize && gate.notarizeOffer && input.partnerUserRef !== "";
    const lookup = presenceLookup({ svcUserId: input.svcUserId, refHash, securesAccount: notarizeOffered, ageGate: gate.type === "age" });
    const presence = lookup && (await recentPresence(em, lookup, { organizationId, environment: session.environment, gate: gate.key, since: presenceSince(now, deps.presenceWindowMs) }));

    const flowSecret = newFlowSecret();
    const status = presence ? "pass" : "pending";
    const expiresAt = new Date(now.getTime() + (presence ? presencePassReadableMs : requestLifetimeMs));
    const sdkType = presence ? "presence" : sdkTypeOfCeremony;
    const pushedToDevices = presence ? 0 : human.devices;
    await em.execute(
      `insert into requests (id, organization_id, environment, gate_key, gate_type, age_threshold, session_id, status, flow_secret_hash,
         blocking_user_hash, partner_ref_hash, partner_ref_sealed, svc_user_id, human_id, mode, sdk_type, notarize_offered, return_url,
         parent_request_id, metadata, pushed_to_devices, created_at, expires_at, ended_at, ended_by)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?, ?, ?)`,
      [
        requestId,
        organizationId,
        session.environment,
        gate.key,
        gate.type,
        gate.ageThreshold,
        session.id,
        status,
        secretHash(flowSecret),
        presence ? null : blockingHash,
        refHash,
        presence || input.partnerUserRef === "" ? null : refs.seal(requestId, input.partnerUserRef),
        input.svcUserId === "" ? null : input.svcUserId,
        presence ? presence.humanId : null,
        authMode,
        sdkType,
        notarizeOffered,
        input.returnUrl === "" ? null : input.returnUrl,
        parent,
        JSON.stringify(eventMetadata(session.metadata, input.metadata) ?? null),
        pushedToDevices,
        now,
        expiresAt,
        presence ? now : null,
        presence ? "presence" : null,
      ],
    );
    if (parent && !presence) {
      // The presence ceremony replaces its pre-check, so one user never has two pending requests.
      await em.execute(
        `update requests set status = 'expired', ended_at = ?, ended_by = 'superseded', partner_ref_sealed = null
          where id = ? and organization_id = ? and environment = ? and gate_key = ? and status = 'pending'
            and blocking_user_hash is not distinct from ?`,
        [now, parent, organizationId, session.environment, gate.key, blockingHash],
      );
    }
    return { requestId, status, flowSecret, expiresAt, pushedToDevices, sdkType, authMode, gate };
  });
}

/** The latest ceremony of the person on this gate and environment since `since`, if any. */
async function recentPresence(
  em: Parameters<Parameters<MikroORM["em"]["transactional"]>[0]>[0],
  lookup: PresenceLookup,
  q: { organizationId: string; environment: string; gate: string; since: Date },
): Promise<{ humanId: string | null } | undefined> {
  const [column, value] = lookup.by === "human" ? ["human_id", lookup.svcUserId] : ["partner_ref_hash", lookup.refHash];
  const rows = await em.execute<{ human_id: string | null }[]>(
    `select human_id from requests where organization_id = ? and environment = ? and gate_key = ? and status = 'completed' and ended_at > ? and ${column} = ?
      order by ended_at desc limit 1`,
    [q.organizationId, q.environment, q.gate, q.since, value],
  );
  return rows[0] ? { humanId: rows[0].human_id } : undefined;
}
