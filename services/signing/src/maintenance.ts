import type { Logger } from "@svc/platform";

export interface MaintenanceTask {
  name: string;
  run(): Promise<void>;
}

export interface Maintenance {
  /** Runs every task once now; a run already under way is joined instead of doubled. */
  runOnce(): Promise<void>;
  stop(): Promise<void>;
}

/** Periodic upkeep on a real-time timer; each task reads the injected clock for its own decisions. */
export function startMaintenance(options: { everyMs: number; tasks: MaintenanceTask[]; logger: Logger }): Maintenance {
  let running: Promise<void> | undefined;
  const runOnce = () =>
    (running ??= (async () => {
      for (const task of options.tasks) {
        try {
          await task.run();
        } catch (error) {
          options.logger.error("maintenance task failed; it runs again at the next tick", { task: task.name, error });
        }
      }
    })().finally(() => {
      running = undefined;
    }));
  const timer = setInterval(() => void runOnce(), options.everyMs);
  timer.unref();
  return {
    runOnce,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
