import { randomBytes } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Clock, RetentionRule } from "@svc/platform";
import { requireHuman } from "../../humans/humans.ts";
import { invalidArgument, refuse } from "../../refusal.ts";
import { coveringVerdict, recordWalletVerdicts, requireThreshold, type WalletVerdict } from "../age-evidence.ts";
import type { Es256KeyPair } from "./es256.ts";
import { type AgeDocType, verifyMdocPresentation } from "./mdoc-verifier.ts";
import {
  dcApiAudience,
  dcApiRequestObject,
  euPidThresholds,
  mdocQueries,
  requestObject,
  requestUriOf,
  responseUriOf,
} from "./presentation-request.ts";
import { verifySdJwtVcPresentation } from "./sd-jwt-vc-verifier.ts";
import type { TrustedIaca } from "./trust-list.ts";
import type { PresentationRefusal, Verification, VerifierDependencies } from "./verification.ts";

/**
 * How long a wallet has to answer one presentation request. It outlasts the gate request it serves
 * (5 minutes from the request's creation, which comes before the presentation's), so when a
 * presentation has expired its gate request has ended.
 */
const presentationLifetimeMs = 10 * 60_000;
/** A vp_token above this is not an age credential; refused unread. */
const maxVpTokenBytes = 32 * 1024;

export interface PresentationContext {
  em: EntityManager;
  clock: Clock;
  verifierKey: Es256KeyPair;
  verifierCertificate: Buffer;
  /** The request objects' client_id (`x509_hash:…`): the KB-JWT's `aud` and the redirect handover's client id. */
  clientId: string;
  credentialTypes: readonly string[];
  verifier: VerifierDependencies;
  iacaRoots: readonly TrustedIaca[];
}

interface PresentationRow {
  id: string;
  svc_user_id: string | null;
  request_id: string | null;
  thresholds: number[];
  nonce: string;
  /** The verifier's origin the presentation was started for (where its URIs live), not the client_id. */
  client_id: string;
  state: "pending" | "accepted";
  source: "sd-jwt-vc" | "mdoc" | null;
  last_refusal: string | null;
  created_at: Date;
  expires_at: Date;
}

const newPresentationId = () => `apr_${randomBytes(16).toString("hex")}`;
const presentationIdPattern = /^apr_[0-9a-f]{32}$/;

/** Raw rows carry times as the driver returns them (text); the rest of this module reads Dates. */
const withDates = (row: PresentationRow | undefined): PresentationRow | undefined =>
  row && { ...row, created_at: new Date(row.created_at), expires_at: new Date(row.expires_at) };

async function load(em: EntityManager, id: string): Promise<PresentationRow | undefined> {
  if (!presentationIdPattern.test(id)) return undefined;
  const [row] = await em.execute<PresentationRow[]>(`select * from age_presentation where id = ?`, [id]);
  return withDates(row);
}

const started = (row: PresentationRow) => ({
  covered: false,
  presentationId: row.id,
  requestUri: requestUriOf(row.client_id, row.id),
  expiresAt: row.expires_at,
});

/**
 * A presentation request: for a gate request, its threshold (unless the human's evidence already
 * answers it, or a presentation for the request was accepted; a pending one of the same human is reused); ahead of
 * time, the EU PID thresholds for the human.
 */
export async function startPresentation(
  ctx: PresentationContext,
  input: { svcUserId: string; requestId: string; threshold: number; clientId: string; at: Date },
): Promise<{ covered: true } | ReturnType<typeof started>> {
  const { em } = ctx;
  if (!/^https?:\/\/[^/]+$/.test(input.clientId)) throw invalidArgument("client_id must be the verifier's origin");
  const svcUserId = input.svcUserId === "" ? null : (await requireHuman(em, input.svcUserId)).id;
  const now = ctx.clock.now();
  let thresholds: number[];
  if (input.requestId === "") {
    if (svcUserId === null) throw invalidArgument("an ahead-of-time presentation names the human");
    thresholds = [...euPidThresholds];
  } else {
    thresholds = [requireThreshold(input.threshold)];
    if (svcUserId && (await coveringVerdict(em, svcUserId, input.threshold, input.at)).verdict !== "unavailable")
      return { covered: true };
    const [existing] = await em.execute<PresentationRow[]>(
      `select * from age_presentation where request_id = ? and (state = 'accepted' or expires_at > ?)
       order by (state = 'accepted') desc, created_at desc limit 1`,
      [input.requestId, now],
    );
    if (existing?.state === "accepted") return { covered: true };
    const reusable = withDates(existing);
    // Reused only for the same human (or none): the app reads a presentation as the signed-in human's.
    if (
      reusable &&
      reusable.thresholds[0] === input.threshold &&
      reusable.client_id === input.clientId &&
      reusable.svc_user_id === svcUserId
    )
      return started(reusable);
  }
  const [row] = await em.execute<PresentationRow[]>(
    `insert into age_presentation (id, svc_user_id, request_id, thresholds, nonce, client_id, state, created_at, expires_at)
     values (?, ?, ?, ?, ?, ?, 'pending', ?, ?) returning *`,
    [
      newPresentationId(),
      svcUserId,
      input.requestId === "" ? null : input.requestId,
      `{${thresholds.join(",")}}`,
      randomBytes(32).toString("base64url"),
      input.clientId,
      now,
      new Date(now.getTime() + presentationLifetimeMs),
    ],
  );
  return started(withDates(row) as PresentationRow);
}

/** An origin as a browser reports it: scheme, host and port only. */
const originPattern = /^https?:\/\/[^/?#]+$/;

/**
 * The signed request object of a pending presentation: for `direct_post` (the request_uri), or, with
 * `dcApiOrigin`, for the Digital Credentials API from a page of that origin. Both carry the one nonce
 * of the presentation: what binds an answer to its way back is its audience (SD-JWT VC) or handover (mdoc).
 */
export async function presentationRequestObject(
  ctx: PresentationContext,
  input: { presentationId: string; dcApiOrigin: string },
): Promise<{ requestObject: string; clientId: string }> {
  const row = await load(ctx.em, input.presentationId);
  if (row?.state !== "pending" || row.expires_at <= ctx.clock.now())
    throw refuse("not_found", "no such pending presentation request");
  const request = {
    id: row.id,
    verifierOrigin: row.client_id,
    clientId: ctx.clientId,
    nonce: row.nonce,
    thresholds: row.thresholds,
    credentialTypes: ctx.credentialTypes,
    issuedAt: ctx.clock.now(),
    expiresAt: row.expires_at,
  };
  const signer = { privateKey: ctx.verifierKey.privateKey, certificate: ctx.verifierCertificate };
  if (input.dcApiOrigin === "") return { requestObject: requestObject(request, signer), clientId: ctx.clientId };
  if (!originPattern.test(input.dcApiOrigin)) throw invalidArgument("dc_api_origin must be an origin");
  return {
    requestObject: dcApiRequestObject({ ...request, origin: input.dcApiOrigin }, signer),
    clientId: ctx.clientId,
  };
}

/**
 * The DeviceResponse and the document type asked for when the `vp_token` answers one mdoc query
 * (`{"age_mdoc": ["<base64url>"]}` or `{"age_av": […]}` and nothing else); anything else goes to the
 * SD-JWT VC verifier, which refuses what is not its own.
 */
function mdocAnswer(vpToken: string): { mdoc?: string; type?: AgeDocType } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(vpToken);
  } catch {
    return {};
  }
  if (typeof parsed !== "object" || parsed === null || Object.keys(parsed).length !== 1) return {};
  const [id = ""] = Object.keys(parsed);
  const query = mdocQueries.find((q) => q.id === id);
  if (!query) return {};
  const answer = (parsed as Record<string, unknown>)[id];
  return {
    mdoc: Array.isArray(answer) && answer.length === 1 && typeof answer[0] === "string" ? answer[0] : "",
    type: query.type,
  };
}

type SubmitRefusal = PresentationRefusal | "unknown_presentation" | "already_answered" | "presentation_expired";

/**
 * The wallet's answer, by `direct_post` (with `state`), or through the Digital Credentials API to a
 * page of `dcApiOrigin` (no `state`; bound to that origin instead of the client_id and response_uri).
 * A refusal stores no evidence: only its reason, on the pending presentation, for the person's page.
 * An accepted one is used up in the same statement that checks it is still pending.
 */
export async function submitPresentation(
  ctx: PresentationContext,
  input: { presentationId: string; vpToken: string; state: string; dcApiOrigin: string },
): Promise<{ accepted: true } | { accepted: false; reason: SubmitRefusal }> {
  const row = await load(ctx.em, input.presentationId);
  if (!row) return { accepted: false, reason: "unknown_presentation" };
  if (row.state === "accepted") return { accepted: false, reason: "already_answered" };
  const now = ctx.clock.now();
  if (row.expires_at <= now) return { accepted: false, reason: "presentation_expired" };
  const format = mdocAnswer(input.vpToken);
  const dcApi = input.dcApiOrigin !== "";
  const wellFormed = dcApi ? originPattern.test(input.dcApiOrigin) : input.state === row.id;
  const verification: Verification =
    !wellFormed || Buffer.byteLength(input.vpToken) > maxVpTokenBytes
      ? { accepted: false, reason: "malformed_presentation" }
      : format.mdoc !== undefined && format.type
        ? await verifyMdocPresentation(
            format.mdoc,
            {
              type: format.type,
              nonce: row.nonce,
              handover: dcApi
                ? { kind: "dc_api", origin: input.dcApiOrigin }
                : { kind: "redirect", clientId: ctx.clientId, responseUri: responseUriOf(row.client_id, row.id) },
              thresholds: row.thresholds,
              now,
            },
            ctx.iacaRoots,
            ctx.verifier,
          )
        : await verifySdJwtVcPresentation(
            input.vpToken,
            {
              nonce: row.nonce,
              audience: dcApi ? dcApiAudience(input.dcApiOrigin) : ctx.clientId,
              thresholds: row.thresholds,
              credentialTypes: ctx.credentialTypes,
              now,
            },
            ctx.verifier,
          );
  if (!verification.accepted) {
    await ctx.em.execute(`update age_presentation set last_refusal = ? where id = ? and state = 'pending'`, [
      verification.reason,
      row.id,
    ]);
    return verification;
  }
  const source = format.mdoc !== undefined ? "mdoc" : "sd-jwt-vc";
  const verdicts = keptVerdicts(verification, source, now);
  return ctx.em.transactional(async (tx) => {
    const [request] = verdicts;
    const taken = await tx.execute<{ id: string }[]>(
      `update age_presentation set state = 'accepted', last_refusal = null, source = ?, issuer = ?, threshold = ?,
         result = ?, valid_until = ?, verified_at = ? where id = ? and state = 'pending' returning id`,
      [source, request?.issuer, request?.threshold, request?.result, request?.validUntil, now, row.id],
    );
    if (taken.length !== 1) return { accepted: false, reason: "already_answered" as const };
    if (row.svc_user_id) recordWalletVerdicts(tx, row.svc_user_id, verdicts);
    return { accepted: true as const };
  });
}

/**
 * What is kept of the disclosed claims: the highest threshold the person is over and the lowest one
 * they are under (the others follow from these two), with the issuer and the credential's expiry.
 */
function keptVerdicts(
  verification: { issuer: string; disclosed: Map<number, boolean>; validUntil: Date },
  source: WalletVerdict["source"],
  verifiedAt: Date,
): WalletVerdict[] {
  const entries = [...verification.disclosed.entries()];
  const over = entries.filter(([, value]) => value).map(([t]) => t);
  const under = entries.filter(([, value]) => !value).map(([t]) => t);
  const base = {
    source,
    issuer: verification.issuer,
    verifiedAt,
    validUntil: verification.validUntil,
  };
  return [
    ...(over.length > 0 ? [{ ...base, threshold: Math.max(...over), result: "over" as const }] : []),
    ...(under.length > 0 ? [{ ...base, threshold: Math.min(...under), result: "under" as const }] : []),
  ];
}

/** Confirming a gate request: the verdict accepted for it becomes the confirming human's evidence. */
export async function claimRequestPresentation(em: EntityManager, svcUserId: string, requestId: string): Promise<void> {
  await em.transactional(async (tx) => {
    const claimed = await tx.execute<
      {
        source: WalletVerdict["source"];
        issuer: string;
        threshold: number;
        result: "over" | "under";
        valid_until: Date;
        verified_at: Date;
      }[]
    >(
      `update age_presentation set svc_user_id = ? where request_id = ? and state = 'accepted' and svc_user_id is null
       returning source, issuer, threshold, result, valid_until, verified_at`,
      [svcUserId, requestId],
    );
    recordWalletVerdicts(
      tx,
      svcUserId,
      claimed.map((row) => ({
        source: row.source,
        issuer: row.issuer,
        threshold: row.threshold,
        result: row.result,
        verifiedAt: new Date(row.verified_at),
        validUntil: new Date(row.valid_until),
      })),
    );
  });
}

/** Where a presentation stands, for its human or the holder of its gate request. */
export async function describePresentation(
  ctx: Pick<PresentationContext, "em" | "clock">,
  input: { presentationId: string; svcUserId: string; requestId: string },
) {
  const row = await load(ctx.em, input.presentationId);
  const mine =
    row !== undefined &&
    ((input.svcUserId !== "" && row.svc_user_id === input.svcUserId) ||
      (input.requestId !== "" && row.request_id === input.requestId));
  if (!row || !mine) throw refuse("not_found", "no such presentation");
  const state = row.state === "accepted" ? "accepted" : row.expires_at <= ctx.clock.now() ? "expired" : "pending";
  return {
    state,
    lastRefusal: state === "pending" ? (row.last_refusal ?? "") : "",
    requestUri: requestUriOf(row.client_id, row.id),
  };
}

/** The newest pending presentation of a gate request (the development wallet's `--request`). */
export async function findRequestPresentation(ctx: Pick<PresentationContext, "em" | "clock">, requestId: string) {
  const [row] = await ctx.em.execute<PresentationRow[]>(
    `select * from age_presentation where request_id = ? and state = 'pending' and expires_at > ? order by created_at desc limit 1`,
    [requestId, ctx.clock.now()],
  );
  if (!row) throw refuse("not_found", "the request has no presentation step open: open the request first");
  return { presentationId: row.id, requestUri: requestUriOf(row.client_id, row.id) };
}

/**
 * Presentations that can no longer matter, `retentionMs` (ACCOUNT_PRESENTATION_RETENTION) past their
 * expiry, while the person's page still reads `expired`: pending ones (never answered), and accepted ones
 * of a gate request that nobody confirmed (their request has ended, see `presentationLifetimeMs`).
 * Accepted ones of a human (ahead of time, or claimed at a confirmation) stay: their verdicts are already
 * the human's evidence, and go with the human. On `age_presentation_due` (migration 0012), whose
 * condition is this rule's `where`, word for word.
 */
export const presentationRetentionRule = (now: Date, retentionMs: number): RetentionRule => ({
  table: "age_presentation",
  column: "expires_at",
  before: new Date(now.getTime() - retentionMs),
  where: "state = 'pending' or (request_id is not null and svc_user_id is null)",
});
