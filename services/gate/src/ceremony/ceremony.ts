import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import { type Clock, constantTimeEqual, environmentProto, type Logger, underItemTrace } from "@svc/platform";
import { type AccountService, AgeVerdict, LinkConflict } from "@svc/proto/account/v1/account_pb.js";
import { AgeResult, type SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import type { FailureReason, LinkRefusal } from "../events/gate-events.ts";
import type { PartnerRefs } from "../partner-refs.ts";
import { refuse } from "../refusal.ts";
import { secretHash } from "../requests/request-ids.ts";
import type { RequestLifecycle } from "../requests/request-lifecycle.ts";
import { type RequestRow, storedRequest } from "../requests/request-row.ts";
import { effectiveStatus, type StoredStatus } from "../requests/status-record.ts";

/** How the person's side proves it may act on a request (see RequestAccess in gate.proto). */
export interface Access {
  flowSecret: string;
  /** The signed-in human, or "" (the web flow in private mode). */
  svcUserId: string;
}

export interface RelyingParty {
  rpId: string;
  origin: string;
}

/** What the assertion confirms: an assertion made for one request cannot confirm another. */
const assertionBinding = (requestId: string): string => `gate-request:${requestId}`;

const linkRefusals: Partial<Record<LinkConflict, LinkRefusal>> = {
  [LinkConflict.ALREADY_TRUSTED]: { failureCode: "already_trusted", failureName: "account_already_secured_here" },
  [LinkConflict.REBIND_REQUIRES_PRIOR_ID]: {
    failureCode: "rebind_requires_prior_id",
    failureName: "account_held_by_another_id",
  },
};

const ageVerdicts: Record<AgeVerdict, { verdict: string; claim: AgeResult }> = {
  [AgeVerdict.OVER]: { verdict: "over", claim: AgeResult.OVER },
  [AgeVerdict.UNDER]: { verdict: "under", claim: AgeResult.UNDER },
  [AgeVerdict.UNAVAILABLE]: { verdict: "unavailable", claim: AgeResult.UNAVAILABLE },
  [AgeVerdict.UNSPECIFIED]: { verdict: "unavailable", claim: AgeResult.UNAVAILABLE },
};

const reportedFailures: readonly FailureReason[] = ["device_lock_required", "platform_declined"];

export interface OpenedRequest {
  row: RequestRow;
  status: StoredStatus;
  ceremonyId: string;
  optionsJson: string;
}

/**
 * The person's side of a request: open it (a passkey assertion bound to it), confirm with the
 * assertion, decline, or report that the device could not run the ceremony. The confirm path is the
 * spec's order: the assertion, the age for an Age Gate, the secured-account link, the token, then the
 * completion with its event in one transaction.
 */
export class Ceremony {
  readonly #lifecycle: RequestLifecycle;
  readonly #account: Client<typeof AccountService>;
  readonly #signing: Client<typeof SigningService>;
  readonly #refs: PartnerRefs;
  readonly #clock: Clock;
  readonly #logger: Logger;

  constructor(options: {
    lifecycle: RequestLifecycle;
    account: Client<typeof AccountService>;
    signing: Client<typeof SigningService>;
    refs: PartnerRefs;
    clock: Clock;
    logger: Logger;
  }) {
    this.#lifecycle = options.lifecycle;
    this.#account = options.account;
    this.#signing = options.signing;
    this.#refs = options.refs;
    this.#clock = options.clock;
    this.#logger = options.logger;
  }

  async open(requestId: string, access: Access, rp: RelyingParty): Promise<OpenedRequest> {
    const row = await this.#authorized(requestId, access);
    const status = await this.#currentStatus(row);
    if (status !== "pending" || !(await this.#lifecycle.markOpened(row.id)))
      return {
        row,
        status: status === "pending" ? await this.#afterRace(row.id) : status,
        ceremonyId: "",
        optionsJson: "",
      };
    const begun = await this.#account.beginPasskeyAssertion({
      svcUserId: row.svc_user_id ?? access.svcUserId,
      rpId: rp.rpId,
      origin: rp.origin,
      binding: assertionBinding(row.id),
    });
    return { row, status, ceremonyId: begun.ceremonyId, optionsJson: begun.optionsJson };
  }

  async confirm(
    requestId: string,
    access: Access,
    assertion: { ceremonyId: string; responseJson: string },
  ): Promise<{ status: StoredStatus; token?: string; returnUrl: string }> {
    const row = await this.#authorized(requestId, access);
    const returnUrl = row.return_url ?? "";
    const status = await this.#currentStatus(row);
    if (status === "expired") return { status, returnUrl };
    if (status !== "pending") throw refuse("conflict", `the request is ${status}, no longer pending`);

    const finished = await this.#account.finishPasskeyAssertion({
      ceremonyId: assertion.ceremonyId,
      responseJson: assertion.responseJson,
      binding: assertionBinding(row.id),
      acceptWithoutUserVerification: true,
    });
    const human = finished.svcUserId;
    if ((row.svc_user_id && human !== row.svc_user_id) || (access.svcUserId && human !== access.svcUserId))
      throw refuse("forbidden", "the passkey belongs to another person than the one this request is for");
    // The signed flags are the server's own evidence, whatever the page says: the passkey answered
    // without verifying the person, so the device has no screen lock or biometric to verify them with.
    if (!finished.userVerified)
      return this.#failByPerson(requestId, access, {
        reason: "device_lock_required",
        errorMessage:
          "the passkey answered without user verification: the device has no screen lock or biometric set up",
      });
    // From here on other services act (account link, signing): the request must not expire under them.
    if (!(await this.#lifecycle.holdForConfirmation(row.id))) {
      const current = await this.#lifecycle.load(row.id);
      return { status: current ? await this.#currentStatus(current) : "expired", returnUrl };
    }
    return underItemTrace(row.trace_context, "gate resolve confirmed", () => this.#resolve(row, human, access));
  }

  /** The confirmed request's account link, attestation and event, once the request is held for them. */
  async #resolve(
    row: RequestRow,
    human: string,
    access: Access,
  ): Promise<{ status: StoredStatus; token?: string; returnUrl: string }> {
    const returnUrl = row.return_url ?? "";
    const now = this.#clock.now();
    const age = row.gate_type === "age" ? await this.#age(human, row.age_threshold ?? 0, now, row.id) : undefined;
    const link = await this.#link(row, human, now);
    if (link.kind === "refused") {
      const failed = await this.#lifecycle.fail(row.id, {
        reason: "internal_error",
        errorMessage: `securing the account was refused: ${link.refusal.failureName}`,
        refusal: link.refusal,
      });
      return { status: failed ? "failed" : await this.#afterRace(row.id), returnUrl };
    }
    if (link.firstTime) await this.#lifecycle.recordLinkCreated(row.id);
    // A token without trusted_since is never trusted (spec "Attestation token").
    const trusted = link.trusted && link.trustedSince !== undefined;
    const signed = await this.#signing.signAttestation({
      requestId: row.id,
      verified: true,
      organizationId: row.organization_id,
      // decisions.md: every attestation a gate issues is for its partner, so verify-token's `audience` can bind it.
      audience: row.organization_id,
      verifiedAt: timestampFromDate(now),
      ageResult: age?.claim ?? AgeResult.UNSPECIFIED,
      trusted,
      ...(trusted ? { trustedSince: link.trustedSince, lastPassAt: timestampFromDate(now) } : {}),
    });
    const completed = await this.#lifecycle.complete(row.id, {
      humanId: human,
      trusted,
      firstTime: link.firstTime,
      handle: link.handle,
      ageVerdict: age?.verdict ?? null,
      token: signed.token,
      tokenExpiresAt: signed.expiresAt ? timestampDate(signed.expiresAt) : now,
    });
    if (!completed) return { status: await this.#afterRace(row.id), returnUrl };
    // The web flow carries the token back to the partner's return_url; the app never needs it.
    const webFlow = access.flowSecret !== "" && access.svcUserId === "";
    return { status: "completed", ...(webFlow ? { token: signed.token } : {}), returnUrl };
  }

  /** The status the person's side sees, without opening the request (no ceremony is begun). */
  async state(requestId: string, access: Access): Promise<{ status: StoredStatus }> {
    return { status: await this.#currentStatus(await this.#authorized(requestId, access)) };
  }

  async decline(requestId: string, access: Access): Promise<{ status: StoredStatus; returnUrl: string }> {
    return this.#failByPerson(requestId, access, { reason: "user_denied", errorMessage: "the person declined" });
  }

  async reportFailure(
    requestId: string,
    access: Access,
    reason: string,
  ): Promise<{ status: StoredStatus; returnUrl: string }> {
    const known = reportedFailures.find((r) => r === reason);
    if (!known) throw refuse("invalid", `reason must be one of ${reportedFailures.join(", ")}`);
    const messages = {
      device_lock_required: "the device has no screen lock or biometric set up",
      platform_declined: "the platform refused the passkey ceremony",
    };
    return this.#failByPerson(requestId, access, {
      reason: known,
      errorMessage: messages[known as keyof typeof messages],
    });
  }

  async #failByPerson(requestId: string, access: Access, failure: { reason: FailureReason; errorMessage: string }) {
    const row = await this.#authorized(requestId, access);
    const returnUrl = row.return_url ?? "";
    const status = await this.#currentStatus(row);
    if (status !== "pending") return { status, returnUrl };
    const failed = await underItemTrace(row.trace_context, "gate resolve failed", () =>
      this.#lifecycle.fail(row.id, failure),
    );
    return { status: failed ? ("failed" as const) : await this.#afterRace(row.id), returnUrl };
  }

  /** A request nobody may learn about unless they hold its flow secret or are the human it names. */
  async #authorized(requestId: string, access: Access): Promise<RequestRow> {
    const row = await this.#lifecycle.load(requestId);
    const bySecret =
      row !== undefined &&
      access.flowSecret !== "" &&
      constantTimeEqual(secretHash(access.flowSecret), Buffer.from(row.flow_secret_hash));
    const byHuman = row !== undefined && access.svcUserId !== "" && row.svc_user_id === access.svcUserId;
    if (!row || !(bySecret || byHuman)) throw refuse("not_found", "no such request");
    return row;
  }

  /** The status the person's side acts on; a window that passed is recorded (with its late event) first. */
  async #currentStatus(row: RequestRow): Promise<StoredStatus> {
    const status = effectiveStatus(storedRequest(row), this.#clock.now());
    if (status === "expired" && (row.status === "pending" || row.ended_by === "window"))
      await underItemTrace(row.trace_context, "gate resolve expired", () => this.#lifecycle.expireOnLateOpen(row.id));
    return status;
  }

  async #afterRace(requestId: string): Promise<StoredStatus> {
    const row = await this.#lifecycle.load(requestId);
    return row ? effectiveStatus(storedRequest(row), this.#clock.now()) : "expired";
  }

  /** A wallet presentation accepted for this request counts for the human confirming it. */
  async #age(human: string, threshold: number, at: Date, requestId: string) {
    const result = await this.#account.evaluateAge({
      svcUserId: human,
      threshold,
      at: timestampFromDate(at),
      requestId,
    });
    return ageVerdicts[result.verdict] ?? ageVerdicts[AgeVerdict.UNAVAILABLE];
  }

  /**
   * Securing the account when it was asked for and offered; otherwise only reading whether the
   * partner's reference is already secured by this human (a plain pass never creates a link).
   */
  async #link(row: RequestRow, human: string, at: Date) {
    const ref = row.partner_ref_sealed ? this.#refs.open(row.id, Buffer.from(row.partner_ref_sealed)) : undefined;
    const scope = {
      organizationId: row.organization_id,
      environment: environmentProto(row.environment),
      partnerUserRef: ref ?? "",
      svcUserId: human,
    };
    if (ref !== undefined && row.notarize_offered) {
      const secured = await this.#account.secureAccount({ ...scope, surfaceId: "", at: timestampFromDate(at) });
      const refusal = linkRefusals[secured.conflict];
      if (refusal) {
        this.#logger.info("securing an account was refused", { requestId: row.id, failureCode: refusal.failureCode });
        return { kind: "refused" as const, refusal };
      }
      return {
        kind: "linked" as const,
        trusted: true,
        firstTime: secured.firstTime,
        handle: secured.handle,
        trustedSince: secured.trustedSince,
      };
    }
    if (ref !== undefined) {
      const link = await this.#account.getAccountLink(scope);
      return {
        kind: "linked" as const,
        trusted: link.trusted,
        firstTime: false,
        handle: link.handle || undefined,
        trustedSince: link.trustedSince,
      };
    }
    return { kind: "linked" as const, trusted: false, firstTime: false, handle: undefined, trustedSince: undefined };
  }
}
