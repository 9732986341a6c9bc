import { inHttpClientSpan } from "@svc/platform";
import type { VisibleText } from "./card-structure.ts";
import { reportValue, type Violation } from "./violation.ts";
import { violationTypes } from "./violation-types.ts";

/** What the classifier receives: the card's visible texts, each with its JSON Pointer into the inquire body. */
type ClassifierRequest = { request_id: string | undefined; texts: VisibleText[] };
type ClassifierAnswer =
  | { kind: "answered"; violations: Violation[] }
  | { kind: "unavailable"; reason: "timeout" | "failed" | "malformed" | "circuit_open" };
export type ClassifierClient = { classify(request: ClassifierRequest): Promise<ClassifierAnswer> };

export type ClassifierOptions = {
  url: string;
  /** Per call, the whole exchange included. */
  timeoutMs?: number;
  /** Consecutive failures that open the circuit. */
  failureThreshold?: number;
  /** How long an open circuit answers `circuit_open` before one trial call is let through. */
  openMs?: number;
  now?: () => number;
};

const classifierDefaults = { timeoutMs: 800, failureThreshold: 5, openMs: 30_000 } as const;
/** A classifier answer larger than this is not read. */
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * The HTTP classifier with a timeout and a circuit breaker. Closed: every call goes out. After
 * `failureThreshold` consecutive failures (timeout, non-2xx, network error, malformed answer) it opens and
 * answers at once, without a call, until `openMs` have passed; then one trial call goes out (half-open), and
 * its success closes the circuit while its failure opens it again.
 */
export function createClassifierClient(options: ClassifierOptions): ClassifierClient {
  const timeoutMs = options.timeoutMs ?? classifierDefaults.timeoutMs;
  const failureThreshold = options.failureThreshold ?? classifierDefaults.failureThreshold;
  const openMs = options.openMs ?? classifierDefaults.openMs;
  const now = options.now ?? Date.now;
  let failures = 0;
  let openUntil = 0;
  let trialInFlight = false;

  return {
    async classify(request) {
      const open = failures >= failureThreshold;
      if (open && (now() < openUntil || trialInFlight)) return { kind: "unavailable", reason: "circuit_open" };
      trialInFlight = open;
      const answer = await inHttpClientSpan("POST classifier", "active", async (span) => {
        const answered = await call(options.url, request, timeoutMs);
        span?.setAttribute("classifier.outcome", answered.kind === "answered" ? "answered" : answered.reason);
        return answered;
      });
      trialInFlight = false;
      if (answer.kind === "answered") failures = 0;
      else if (++failures >= failureThreshold) openUntil = now() + openMs;
      return answer;
    },
  };
}

async function call(url: string, request: ClassifierRequest, timeoutMs: number): Promise<ClassifierAnswer> {
  const body = JSON.stringify({
    request_id: request.request_id ?? null,
    texts: request.texts.map(({ path, text }) => ({ path, text })),
  });
  let raw: string;
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body,
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!response.ok) {
      await response.body?.cancel();
      return { kind: "unavailable", reason: "failed" };
    }
    if (Number(response.headers.get("content-length") ?? 0) > MAX_ANSWER_BYTES) {
      await response.body?.cancel();
      return { kind: "unavailable", reason: "malformed" };
    }
    raw = await response.text();
  } catch (error) {
    const timedOut = error instanceof DOMException && (error.name === "TimeoutError" || error.name === "AbortError");
    return { kind: "unavailable", reason: timedOut ? "timeout" : "failed" };
  }
  const violations = raw.length > MAX_ANSWER_BYTES ? undefined : parseAnswer(raw, request.texts);
  return violations === undefined ? { kind: "unavailable", reason: "malformed" } : { kind: "answered", violations };
}

/**
 * `{"violations": [{"path", "severity", "explanation"?, "fix"?}]}`, each path one the classifier was sent.
 * The value is the layer's own copy of the text at that path, never the classifier's.
 */
function parseAnswer(raw: string, texts: VisibleText[]): Violation[] | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return undefined;
  }
  const items = (parsed as { violations?: unknown } | null)?.violations;
  if (!Array.isArray(items)) return undefined;
  const byPath = new Map(texts.map((item) => [item.path, item.text]));
  const violations: Violation[] = [];
  for (const item of items) {
    const { path, severity, explanation, fix } = (item ?? {}) as Record<string, unknown>;
    if (typeof path !== "string" || !byPath.has(path) || (severity !== "error" && severity !== "warning"))
      return undefined;
    const entry = violationTypes.classifier_flagged;
    violations.push({
      source: "classifier",
      type: "classifier_flagged",
      path,
      severity,
      value: reportValue(byPath.get(path)),
      explanation:
        typeof explanation === "string" && explanation.trim() !== ""
          ? reportValue(explanation.trim())
          : entry.explanation,
      fix: typeof fix === "string" && fix.trim() !== "" ? reportValue(fix.trim()) : entry.fix,
    });
  }
  return violations;
}

/** `AGENTLINK_CLASSIFIER_URL` (unset: no classifier) and `AGENTLINK_CLASSIFIER_TIMEOUT` (`800ms`, `2s`, or ms). */
export function classifierFromEnvironment(
  env: Record<string, string | undefined>,
  now?: () => number,
): ClassifierClient | undefined {
  const url = env.AGENTLINK_CLASSIFIER_URL?.trim();
  if (url === undefined || url === "") return undefined;
  // A malformed URL fails the service at start, not the first inquire.
  new URL(url);
  const timeout = env.AGENTLINK_CLASSIFIER_TIMEOUT?.trim();
  return createClassifierClient({ url, timeoutMs: timeout ? parseMilliseconds(timeout) : undefined, now });
}

function parseMilliseconds(raw: string): number {
  const match = /^(\d+)(ms|s)?$/.exec(raw);
  if (match === null || Number(match[1]) === 0)
    throw new Error(`AGENTLINK_CLASSIFIER_TIMEOUT is not a duration like 800ms or 2s: ${raw}`);
  return Number(match[1]) * (match[2] === "s" ? 1000 : 1);
}
