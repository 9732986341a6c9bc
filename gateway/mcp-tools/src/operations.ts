import type { Verifier } from "@svc/sdk";

/**
 * `data.error` as the public API answers it: `statusCode` and `message`, `code` when there is one, and the
 * code's own fields (a trust-layer rejection's `violations`, a rate limit's `retry_in`).
 */
export interface Refusal {
  statusCode: number;
  message: string;
  code?: string;
  [field: string]: unknown;
}

/** What one agent operation answered: its result (`data.data`), or its refusal. */
export type Answer = { ok: true; data: Record<string, unknown> } | { ok: false; error: Refusal };

/**
 * The agent operations of the public API, called by the tools. The gateway runs them in its own process
 * (the routes' pipeline without HTTP), `svcctl mcp --stdio` over HTTP with the agent's key; either way an
 * operation answers what its JSON route would, and each call counts against the agent's rate limits as one
 * request of that route.
 */
export interface AgentOperations {
  /** `POST /agent/bind-session`. */
  bindSession(input: { person_label?: string }): Promise<Answer>;
  /** `GET /agent/check-binding`. */
  checkBinding(input: { link_code: string }): Promise<Answer>;
  /** `POST /agentlink/inquire`. */
  inquire(input: Record<string, unknown>): Promise<Answer>;
  /** `GET /agentlink/check-status`; a long-poll when `wait_seconds` > 0, ended early by `signal`. */
  checkStatus(input: { request_id: string; wait_seconds?: number }, signal: AbortSignal): Promise<Answer>;
  /** `POST /agentlink/cancel`. */
  cancel(input: { request_id: string; reason?: string }): Promise<Answer>;
  /** Checks proofs offline against the service's key set. */
  verifier: Pick<Verifier, "verifyProof">;
}

/**
 * The rate limiter's HTTP 403 (`errors`, `_rateLimit`, and on a development agent `data.error`) as a refusal:
 * its `data.error` when it has one, else `statusCode` 429 `RATE_LIMITED` with the seconds until a retry passes.
 */
export function rateLimitRefusal(body: unknown): Refusal {
  const blocked = body as {
    errors?: { message: string }[];
    data?: { error?: Refusal };
    _rateLimit?: { primary?: { resetIn?: number } };
  };
  return (
    blocked.data?.error ?? {
      statusCode: 429,
      code: "RATE_LIMITED",
      message: blocked.errors?.[0]?.message ?? "rate limit exceeded",
      retry_in: blocked._rateLimit?.primary?.resetIn ?? 1,
    }
  );
}
