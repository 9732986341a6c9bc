import { startWakeableLoop } from "@svc/platform";
import { describe, expect, it } from "vitest";

describe("wakeable loop", () => {
  it("runs again at once while there is more work, then waits for the poll", async () => {
    const runs: number[] = [];
    let backlog = 3;
    const loop = startWakeableLoop({
      pollMs: 60_000,
      work: async () => {
        runs.push(backlog);
        backlog -= 1;
        return backlog > 0;
      },
      onError: () => {},
    });
    await expect.poll(() => runs).toEqual([3, 2, 1]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(runs).toHaveLength(3);
    await loop.stop();
  });

  it("a wake runs the work without waiting for the poll, also when it comes during a run", async () => {
    let runs = 0;
    let release: () => void = () => {};
    const loop = startWakeableLoop({
      pollMs: 60_000,
      work: () =>
        new Promise<boolean>((resolve) => {
          runs++;
          release = () => resolve(false);
        }),
      onError: () => {},
    });
    await expect.poll(() => runs).toBe(1);
    loop.wake();
    release();
    await expect.poll(() => runs).toBe(2);
    release();
    loop.wake();
    await expect.poll(() => runs).toBe(3);
    release();
    await loop.stop();
  });

  it("a wake while it waits runs the work once, not once more after", async () => {
    let runs = 0;
    const loop = startWakeableLoop({
      pollMs: 60_000,
      work: async () => {
        runs++;
        return false;
      },
      onError: () => {},
    });
    await expect.poll(() => runs).toBe(1);
    loop.wake();
    await expect.poll(() => runs).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(runs).toBe(2);
    await loop.stop();
  });

  it("reports a failing run and keeps going", async () => {
    const errors: unknown[] = [];
    let runs = 0;
    const loop = startWakeableLoop({
      pollMs: 5,
      work: async () => {
        if (++runs === 1) throw new Error("database unreachable");
        return false;
      },
      onError: (error) => errors.push(error),
    });
    await expect.poll(() => runs).toBeGreaterThanOrEqual(2);
    await loop.stop();
    expect(errors).toEqual([new Error("database unreachable")]);
  });
});
