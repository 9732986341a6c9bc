import type { Logger } from "./logger.ts";
import { counter } from "./metrics.ts";

const stepRuns = counter("periodic_step_runs_total", "Runs of a periodic step (sweeps, retention), by outcome", [
  "step",
  "outcome",
]);
const stepRows = counter("periodic_step_rows_total", "Rows a periodic step handled (swept, expired, deleted)", [
  "step",
]);

/** The timer a periodic job waits on: real time in a service, a hand-fired one in a test. */
export interface JobTimer {
  set(callback: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

/** Node's timers, unref'd: a job's timer never keeps a process alive that has nothing else to do. */
export const realJobTimer: JobTimer = {
  set: (callback, ms) => setTimeout(callback, ms).unref(),
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface PeriodicStep {
  /** What the step does, for the log and the metrics' `step` label ("expiry sweep"). */
  name: string;
  /** A number it resolves to counts as the rows it handled. */
  run(): Promise<unknown>;
}

export interface PeriodicJob {
  /** Runs every step now; a run already under way is joined instead of doubled. */
  runOnce(): Promise<void>;
  /** No run starts any more; resolves once the run under way, if any, has ended. */
  stop(): Promise<void>;
}

export interface PeriodicJobOptions {
  /** The longest wait between the end of one run and the start of the next. */
  everyMs: number;
  /** Run in order; one that fails does not keep the next from running. */
  steps: readonly PeriodicStep[];
  logger: Logger;
  /**
   * Each wait is `everyMs` times a factor drawn from [1 - jitter, 1] (default 0.1), so replicas started
   * together do not all run at the same instant, and a bound stated in `everyMs` (a key published that
   * long ahead, a due row deleted within it) still holds.
   */
  jitter?: number;
  timer?: JobTimer;
  /** Draws the jitter (default Math.random). */
  random?: () => number;
}

/**
 * Background work on a real-time timer (sweeps, retention, heartbeats): one run at a time, the next wait
 * counted from the end of the last run. A step that fails is logged once, at warn, and not again on every
 * run while it keeps failing; when it works again that is logged once, at info, with how many runs failed.
 * What each step decides (what is due, what expired) it reads from the injected clock, not from this timer.
 */
export function startPeriodicJob(options: PeriodicJobOptions): PeriodicJob {
  const { everyMs, steps, logger, jitter = 0.1, timer = realJobTimer, random = Math.random } = options;
  const failedRuns = new Map<PeriodicStep, number>();
  let running: Promise<void> | undefined;
  let stopped = false;
  let handle: unknown;

  const runStep = async (step: PeriodicStep) => {
    try {
      const handled = await step.run();
      stepRuns.inc({ step: step.name, outcome: "ok" });
      if (typeof handled === "number") stepRows.inc({ step: step.name }, handled);
      const failed = failedRuns.get(step);
      if (failed === undefined) return;
      failedRuns.delete(step);
      logger.info(`${step.name} works again`, { failedRuns: failed });
    } catch (error) {
      stepRuns.inc({ step: step.name, outcome: "failed" });
      const failed = failedRuns.get(step) ?? 0;
      failedRuns.set(step, failed + 1);
      if (failed === 0)
        logger.warn(`${step.name} failed; it runs again at every tick, logged again only once it works`, { error });
    }
  };
  const runOnce = () =>
    (running ??= (async () => {
      for (const step of steps) await runStep(step);
    })().finally(() => {
      running = undefined;
    }));
  const schedule = () => {
    if (stopped) return;
    handle = timer.set(() => void runOnce().then(schedule), everyMs * (1 - jitter * random()));
  };
  schedule();

  return {
    runOnce,
    async stop() {
      stopped = true;
      timer.clear(handle);
      await running;
    },
  };
}
