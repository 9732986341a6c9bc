/**
 * The status record of `GET /verification/status` (spec "Verification request"), computed from a
 * stored request at an instant. Expiry is evaluated here too, so a read never waits for the sweep.
 */
export type StoredStatus = "pending" | "completed" | "failed" | "expired" | "pass";
type RecordStatus = StoredStatus | "not_found";

export interface StoredRequest {
  status: StoredStatus;
  gateType: "human" | "age";
  /** The request's own expiry; for a Recent Presence pass, 60 seconds after the check. */
  expiresAt: Date;
  /** Set while a confirmation that began inside the window is under way: until then it may still complete. */
  confirmingUntil: Date | null;
  trusted: boolean | null;
  firstTime: boolean | null;
  /** already_trusted, rebind_requires_prior_id or unavailable, for a failed request. */
  failureReason: string | null;
  ageVerdict: string | null;
  token: string | null;
  tokenExpiresAt: Date | null;
}

export interface StatusRecord {
  found: boolean;
  status: RecordStatus;
  message: string;
  trusted?: boolean;
  firstTime?: boolean;
  reason?: string;
  ageVerdict?: string;
  expiresAt?: Date;
  token?: string;
}

const messages: Record<RecordStatus, string> = {
  pending: "waiting for the person to confirm",
  completed: "the human confirmed",
  pass: "a recent presence pass: the human was verified without a ceremony",
  expired: "the request expired",
  failed: "the request failed",
  not_found: "no request with this id",
};

/**
 * pending and pass records read `expired` once their window has passed, whether or not the sweep ran;
 * a pending one whose confirmation began in time reads `pending` until that confirmation ends or its
 * hold runs out.
 */
export function effectiveStatus(
  request: Pick<StoredRequest, "status" | "expiresAt" | "confirmingUntil">,
  now: Date,
): StoredStatus {
  const open = request.status === "pending" || request.status === "pass";
  const confirming =
    request.status === "pending" &&
    request.confirmingUntil !== null &&
    request.confirmingUntil.getTime() > now.getTime();
  return open && !confirming && request.expiresAt.getTime() <= now.getTime() ? "expired" : request.status;
}

export function statusRecord(request: StoredRequest | undefined, now: Date): StatusRecord {
  if (!request) return { found: false, status: "not_found", message: messages.not_found };
  const status = effectiveStatus(request, now);
  const record: StatusRecord = { found: true, status, message: messages[status], expiresAt: request.expiresAt };
  if (status === "completed") {
    record.trusted = request.trusted ?? false;
    record.firstTime = request.firstTime ?? false;
    if (request.gateType === "age" && request.ageVerdict) record.ageVerdict = request.ageVerdict;
    if (request.token && request.tokenExpiresAt && request.tokenExpiresAt.getTime() > now.getTime())
      record.token = request.token;
  }
  if (status === "failed") record.reason = request.failureReason ?? "unavailable";
  return record;
}
