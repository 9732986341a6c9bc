import { NaturalBatcher } from "@svc/platform";
import { describe, expect, it } from "vitest";

/** A `run` that records each batch and holds it open until released. */
function heldRuns<In, Out>(answer: (item: In) => Out) {
  const batches: In[][] = [];
  const releases: (() => void)[] = [];
  const run = (items: In[]) =>
    new Promise<Out[]>((resolve) => {
      batches.push(items);
      releases.push(() => resolve(items.map(answer)));
    });
  return { batches, run, releaseNext: () => releases.shift()!() };
}

describe("natural batcher", () => {
  it("sends a call made while idle at once and alone, and the calls that arrive meanwhile together after it", async () => {
    const runs = heldRuns((n: number) => n * 10);
    const batcher = new NaturalBatcher({ run: runs.run, maxBatch: 64 });
    const first = batcher.submit(1);
    const rest = [batcher.submit(2), batcher.submit(3), batcher.submit(4)];
    expect(runs.batches).toEqual([[1]]);
    runs.releaseNext();
    expect(await first).toBe(10);
    await expect.poll(() => runs.batches).toEqual([[1], [2, 3, 4]]);
    runs.releaseNext();
    expect(await Promise.all(rest)).toEqual([20, 30, 40]);
  });

  it("with gatherTurn, the calls one turn of the event loop makes while idle leave together", async () => {
    const runs = heldRuns((n: number) => n);
    const batcher = new NaturalBatcher({ run: runs.run, maxBatch: 64, gatherTurn: true });
    const first = [batcher.submit(1), batcher.submit(2), batcher.submit(3)];
    expect(runs.batches).toEqual([]);
    await expect.poll(() => runs.batches).toEqual([[1, 2, 3]]);
    const later = batcher.submit(4);
    runs.releaseNext();
    expect(await Promise.all(first)).toEqual([1, 2, 3]);
    await expect.poll(() => runs.batches).toEqual([[1, 2, 3], [4]]);
    runs.releaseNext();
    expect(await later).toBe(4);
  });

  it("with gatherTurn, the batch after one that ends also leaves at the end of that turn, with the calls the turn made", async () => {
    const runs = heldRuns((n: number) => n);
    const batcher = new NaturalBatcher({ run: runs.run, maxBatch: 64, gatherTurn: true });
    const first = batcher.submit(1);
    await expect.poll(() => runs.batches).toEqual([[1]]);
    const second = batcher.submit(2);
    // Two callbacks of one turn: the first ends the batch under way, the second makes a call.
    const { third } = await new Promise<{ third: Promise<number> }>((made) => {
      setTimeout(() => runs.releaseNext(), 0);
      setTimeout(() => made({ third: batcher.submit(3) }), 0);
    });
    expect(await first).toBe(1);
    await expect.poll(() => runs.batches).toEqual([[1], [2, 3]]);
    runs.releaseNext();
    expect(await Promise.all([second, third])).toEqual([2, 3]);
  });

  it("caps a batch at maxBatch; the rest leave in the next one", async () => {
    const runs = heldRuns((n: number) => n);
    const batcher = new NaturalBatcher({ run: runs.run, maxBatch: 2 });
    const all = [1, 2, 3, 4, 5].map((n) => batcher.submit(n));
    runs.releaseNext();
    await expect.poll(() => runs.batches.length).toBe(2);
    runs.releaseNext();
    await expect.poll(() => runs.batches.length).toBe(3);
    runs.releaseNext();
    expect(await Promise.all(all)).toEqual([1, 2, 3, 4, 5]);
    expect(runs.batches).toEqual([[1], [2, 3], [4, 5]]);
  });

  it("never puts two items sharing a key in one batch; the later one keeps its place for the next", async () => {
    const runs = heldRuns((item: { id: number; key: string }) => item.id);
    const batcher = new NaturalBatcher({ run: runs.run, maxBatch: 64, keys: (item) => [item.key] });
    const all = [
      { id: 0, key: "z" },
      { id: 1, key: "a" },
      { id: 2, key: "b" },
      { id: 3, key: "a" },
      { id: 4, key: "c" },
    ].map((item) => batcher.submit(item));
    runs.releaseNext();
    await expect.poll(() => runs.batches.length).toBe(2);
    runs.releaseNext();
    await expect.poll(() => runs.batches.length).toBe(3);
    runs.releaseNext();
    await Promise.all(all);
    expect(runs.batches.map((batch) => batch.map((item) => item.id))).toEqual([[0], [1, 2, 4], [3]]);
  });

  it("rejects every call of a failed batch with its error", async () => {
    const failure = new Error("down");
    const batcher = new NaturalBatcher<number, number>({ run: () => Promise.reject(failure), maxBatch: 64 });
    const answers = await Promise.allSettled([batcher.submit(1), batcher.submit(2), batcher.submit(3)]);
    expect(answers).toEqual([1, 2, 3].map(() => ({ status: "rejected", reason: failure })));
  });

  it("with retryAlone, a failed batch is run again item by item: only the failing item fails", async () => {
    const runs: number[][] = [];
    const batcher = new NaturalBatcher<number, number>({
      run: async (items) => {
        runs.push(items);
        if (items.includes(3)) throw new Error(`batch with 3 of ${items.length}`);
        return items.map((n) => -n);
      },
      maxBatch: 64,
      retryAlone: true,
    });
    const answers = await Promise.allSettled([1, 2, 3, 4].map((n) => batcher.submit(n)));
    expect(answers).toEqual([
      { status: "fulfilled", value: -1 },
      { status: "fulfilled", value: -2 },
      { status: "rejected", reason: new Error("batch with 3 of 1") },
      { status: "fulfilled", value: -4 },
    ]);
    expect(runs).toEqual([[1], [2, 3, 4], [2], [3], [4]]);
  });

  it("a batch answering the wrong number of results fails its calls instead of answering them wrongly", async () => {
    const batcher = new NaturalBatcher<number, number>({ run: async (items) => items.slice(1), maxBatch: 64 });
    const first = batcher.submit(1);
    await expect(first).rejects.toThrow("a batch of 1 answered 0 results");
  });
});
