import { type JobTimer, type LogFields, type Logger, startPeriodicJob } from "@svc/platform";
import { describe, expect, it } from "vitest";

/** A timer fired by hand: it holds the one wait a job has asked for, if any. */
function handTimer() {
  let pending: { callback: () => void; ms: number; handle: number } | undefined;
  let next = 0;
  const timer: JobTimer = {
    set(callback, ms) {
      pending = { callback, ms, handle: ++next };
      return pending.handle;
    },
    clear(handle) {
      if (pending?.handle === handle) pending = undefined;
    },
  };
  return {
    timer,
    /** The wait asked for, in milliseconds, or undefined when none is pending. */
    waiting: () => pending?.ms,
    fire() {
      const fired = pending;
      if (fired === undefined) throw new Error("no wait is pending");
      pending = undefined;
      fired.callback();
    },
  };
}

function recordingLogger() {
  const lines: { level: string; msg: string; fields?: LogFields }[] = [];
  const at =
    (level: string) =>
    (msg: string, fields?: LogFields): void =>
      void lines.push({ level, msg, fields });
  const logger: Logger = {
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    child: () => logger,
  };
  return { logger, lines };
}

function gate() {
  let open: () => void = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe("periodic job", () => {
  it("waits at most everyMs, shortened by a jitter drawn anew for every wait", async () => {
    const hand = handTimer();
    const draws = [0, 0.5, 1];
    const job = startPeriodicJob({
      everyMs: 60_000,
      steps: [{ name: "sweep", run: async () => {} }],
      logger: recordingLogger().logger,
      timer: hand.timer,
      random: () => draws.shift() ?? 0.5,
    });
    expect(hand.waiting()).toBe(60_000);
    hand.fire();
    await job.runOnce();
    expect(hand.waiting()).toBe(57_000);
    hand.fire();
    await job.runOnce();
    expect(hand.waiting()).toBe(54_000);
    await job.stop();
  });

  it("runs one run at a time: a run asked for during one joins it, and the next wait starts after it", async () => {
    const hand = handTimer();
    let runs = 0;
    let release = gate();
    const job = startPeriodicJob({
      everyMs: 1000,
      steps: [
        {
          name: "slow sweep",
          run: async () => {
            runs++;
            await release.opened;
          },
        },
      ],
      logger: recordingLogger().logger,
      timer: hand.timer,
    });
    hand.fire();
    const joined = job.runOnce();
    expect(runs).toBe(1);
    expect(hand.waiting()).toBeUndefined();
    release.open();
    await joined;
    expect(runs).toBe(1);
    expect(hand.waiting()).toBeGreaterThan(0);
    release = gate();
    release.open();
    await job.runOnce();
    expect(runs).toBe(2);
    await job.stop();
  });

  it("logs a failing step once until it works again, and runs the next steps anyway", async () => {
    const hand = handTimer();
    const { logger, lines } = recordingLogger();
    let failing = true;
    let after = 0;
    const job = startPeriodicJob({
      everyMs: 1000,
      steps: [
        {
          name: "retention",
          run: async () => {
            if (failing) throw new Error("database unreachable");
          },
        },
        { name: "expiry sweep", run: async () => void after++ },
      ],
      logger,
      timer: hand.timer,
    });
    for (let tick = 0; tick < 3; tick++) {
      hand.fire();
      await job.runOnce();
    }
    expect(after).toBe(3);
    expect(lines).toEqual([
      {
        level: "warn",
        msg: "retention failed; it runs again at every tick, logged again only once it works",
        fields: { error: new Error("database unreachable") },
      },
    ]);
    failing = false;
    hand.fire();
    await job.runOnce();
    expect(lines.slice(1)).toEqual([{ level: "info", msg: "retention works again", fields: { failedRuns: 3 } }]);
    failing = true;
    hand.fire();
    await job.runOnce();
    expect(lines.slice(2).map((line) => line.level)).toEqual(["warn"]);
    await job.stop();
  });

  it("stop clears the wait, lets the run under way end, and starts none after it", async () => {
    const hand = handTimer();
    let runs = 0;
    const release = gate();
    const job = startPeriodicJob({
      everyMs: 1000,
      steps: [
        {
          name: "heartbeat",
          run: async () => {
            runs++;
            await release.opened;
          },
        },
      ],
      logger: recordingLogger().logger,
      timer: hand.timer,
    });
    hand.fire();
    let stopped = false;
    const stopping = job.stop().then(() => {
      stopped = true;
    });
    await Promise.resolve();
    expect(stopped).toBe(false);
    release.open();
    await stopping;
    expect(runs).toBe(1);
    expect(hand.waiting()).toBeUndefined();
  });

  it("a stopped job's pending wait is cleared", async () => {
    const hand = handTimer();
    const job = startPeriodicJob({
      everyMs: 1000,
      steps: [],
      logger: recordingLogger().logger,
      timer: hand.timer,
      jitter: 0.25,
      random: () => 1,
    });
    expect(hand.waiting()).toBe(750);
    await job.stop();
    expect(hand.waiting()).toBeUndefined();
  });
});
