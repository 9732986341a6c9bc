import { setTimeout as sleep } from "node:timers/promises";

/**
 * Runs `attempt` until it succeeds, waiting `delaysMs[i]` (with up to half of it again as jitter, so
 * replicas that failed together do not retry together) after the i-th failure. Once the delays run out
 * the last error is thrown: the retry is bounded, and whatever comes after it (a sweep) takes over.
 */
export async function withBackoff<T>(
  attempt: () => Promise<T>,
  options: { delaysMs: readonly number[]; onRetry?: (error: unknown, delayMs: number) => void },
): Promise<T> {
  for (let failures = 0; ; failures++) {
    try {
      return await attempt();
    } catch (error) {
      const delay = options.delaysMs[failures];
      if (delay === undefined) throw error;
      const jittered = Math.round(delay * (1 + Math.random() / 2));
      options.onRetry?.(error, jittered);
      await sleep(jittered);
    }
  }
}
