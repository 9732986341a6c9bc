import { describe, expect, it } from "vitest";
import { withBackoff } from "../src/backoff.ts";

describe("withBackoff", () => {
  it("retries a failing attempt after each delay and answers its first success", async () => {
    let calls = 0;
    const waits: number[] = [];
    const result = await withBackoff(
      async () => {
        calls++;
        if (calls < 3) throw new Error(`failure ${calls}`);
        return "answered";
      },
      { delaysMs: [1, 2, 4], onRetry: (_, ms) => waits.push(ms) },
    );
    expect(result).toBe("answered");
    expect(calls).toBe(3);
    // Each wait is its delay plus at most half of it as jitter.
    expect(waits).toHaveLength(2);
    expect(waits[0]).toBeGreaterThanOrEqual(1);
    expect(waits[0]).toBeLessThanOrEqual(2);
    expect(waits[1]).toBeGreaterThanOrEqual(2);
    expect(waits[1]).toBeLessThanOrEqual(3);
  });

  it("is bounded: after the last delay the last error is thrown", async () => {
    let calls = 0;
    await expect(
      withBackoff(
        async () => {
          calls++;
          throw new Error(`failure ${calls}`);
        },
        { delaysMs: [1, 1] },
      ),
    ).rejects.toThrow("failure 3");
    expect(calls).toBe(3);
  });
});
