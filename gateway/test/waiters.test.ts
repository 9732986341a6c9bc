import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { cardKey, Waiters } from "../src/long-poll/waiters.ts";

const card = { agentId: "agent-1", requestId: "6f1c0a52-3b7e-4d2f-9a61-0c8e5b7d4a10" };
const key = cardKey(card.agentId, card.requestId);
const hour = 3_600_000;

/** A card's reads, one status each, in turn; the last repeats. */
function reads(...statuses: string[]) {
  let count = 0;
  const read = vi.fn(async () => statuses[Math.min(count++, statuses.length - 1)] as string);
  return read;
}
const whileQueued = (ms: number) => (status: string) => (status === "queued" ? ms : 0);

/** Whether a promise has settled, after the microtasks queued so far have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  await vi.advanceTimersByTimeAsync(0);
  return done;
}

describe("the long-poll registry", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("answers a card not queued from the first read, holding nothing", async () => {
    const waiters = new Waiters<string>();
    const read = reads("cancelled");
    expect(await waiters.hold(key, read, whileQueued(hour))).toBe("cancelled");
    expect(read).toHaveBeenCalledTimes(1);
    expect(waiters.size).toBe(0);
  });

  it("holds a queued card until it is woken, and answers what the notification carries", async () => {
    const waiters = new Waiters<string>();
    const read = reads("queued");
    const held = waiters.hold(key, read, whileQueued(hour));
    expect(await settled(held)).toBe(false);
    expect(waiters.size).toBe(1);
    waiters.wake(cardKey(card.agentId, card.requestId.toUpperCase()), "approved");
    expect(await held).toBe("approved");
    expect(read).toHaveBeenCalledTimes(1);
    expect(waiters.size).toBe(0);
  });

  it("reads the card again when woken without an answer", async () => {
    const waiters = new Waiters<string>();
    const read = reads("queued", "denied");
    const held = waiters.hold(key, read, whileQueued(hour));
    await vi.advanceTimersByTimeAsync(0);
    waiters.wake(cardKey(card.agentId, card.requestId));
    expect(await held).toBe("denied");
    expect(read).toHaveBeenCalledTimes(2);
  });

  it("is woken by a change made while its first read runs (registered before reading)", async () => {
    const waiters = new Waiters<string>();
    const read = async () => {
      waiters.wake(cardKey(card.agentId, card.requestId), "cancelled"); // committed and notified before this read answers
      return "queued";
    };
    expect(await waiters.hold(key, read, whileQueued(hour))).toBe("cancelled");
  });

  it("reads again when its time is up, and is not woken by another card", async () => {
    const waiters = new Waiters<string>();
    const read = reads("queued");
    const held = waiters.hold(key, read, whileQueued(1000));
    await vi.advanceTimersByTimeAsync(0);
    waiters.wake(cardKey(card.agentId, "0b3a2c1d-9e8f-4a7b-8c6d-5e4f3a2b1c0d"), "approved");
    waiters.wake(cardKey("agent-2", card.requestId), "approved");
    await vi.advanceTimersByTimeAsync(999);
    expect(await settled(held)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await held).toBe("queued");
    expect(read).toHaveBeenCalledTimes(2);
  });

  it("wakes every wait of one card together", async () => {
    const waiters = new Waiters<string>();
    const held = [1, 2, 3].map(() => waiters.hold(key, reads("queued"), whileQueued(hour)));
    await vi.advanceTimersByTimeAsync(0);
    expect(waiters.size).toBe(3);
    waiters.wake(cardKey(card.agentId, card.requestId), "denied");
    expect(await Promise.all(held)).toEqual(["denied", "denied", "denied"]);
  });

  it("answers every held wait when closed, and holds none after", async () => {
    const waiters = new Waiters<string>();
    const other = { agentId: "agent-2", requestId: card.requestId };
    const held = [card, other].map((c) =>
      waiters.hold(cardKey(c.agentId, c.requestId), reads("queued", "queued at the stop"), whileQueued(hour)),
    );
    await vi.advanceTimersByTimeAsync(0);
    waiters.close();
    expect(await Promise.all(held)).toEqual(["queued at the stop", "queued at the stop"]);
    expect(await waiters.hold(key, reads("queued"), whileQueued(hour))).toBe("queued");
    expect(waiters.size).toBe(0);
  });

  it("lets a failed read through and holds nothing after it", async () => {
    const waiters = new Waiters<string>();
    const failing = async () => {
      throw new Error("agentlink unreachable");
    };
    await expect(waiters.hold(key, failing, whileQueued(hour))).rejects.toThrow("agentlink unreachable");
    expect(waiters.size).toBe(0);
  });

  it("frees the wait at once when its client goes away, reading nothing again", async () => {
    const waiters = new Waiters<string>();
    const read = reads("queued");
    const gone = new AbortController();
    const held = waiters.hold(key, read, whileQueued(hour), gone.signal);
    await vi.advanceTimersByTimeAsync(0);
    expect(waiters.size).toBe(1);
    gone.abort();
    expect(await held).toBe("queued");
    expect(read).toHaveBeenCalledTimes(1);
    expect(waiters.size).toBe(0);
  });

  it("calls a listener at every wake until it stops listening, and once more when closed", () => {
    const waiters = new Waiters<string>();
    const heard = vi.fn();
    const stop = waiters.listen("person-1", heard);
    waiters.wake("person-1");
    waiters.wake("person-2");
    waiters.wake("person-1");
    expect(heard).toHaveBeenCalledTimes(2);
    stop();
    waiters.wake("person-1");
    expect(heard).toHaveBeenCalledTimes(2);
    expect(waiters.size).toBe(0);
    const other = vi.fn();
    waiters.listen("person-3", other);
    waiters.close();
    expect(other).toHaveBeenCalledTimes(1);
    expect(waiters.closed).toBe(true);
  });
});
