import type { EntityManager, MikroORM } from "@mikro-orm/postgresql";
import type { Clock, Logger } from "@svc/platform";

const sweepEveryMs = 10 * 60_000;

export interface Sweep {
  /** What is swept, for the log. */
  name: string;
  /** Deletes what is dead at `now` (read from the injected clock); the count deleted. */
  run: (em: EntityManager, now: Date) => Promise<number>;
}

/**
 * Runs each sweep every 10 minutes on a real-time timer, one tick at a time; what counts as dead is
 * decided by each sweep from the injected clock, so tests call the sweeps themselves at chosen instants.
 */
export function startSweeps(
  sweeps: readonly Sweep[],
  options: { orm: MikroORM; clock: Clock; logger: Logger },
): () => Promise<void> {
  let running: Promise<void> | undefined;
  const tick = () => {
    running ??= (async () => {
      for (const sweep of sweeps) {
        try {
          const deleted = await sweep.run(options.orm.em.fork(), options.clock.now());
          if (deleted > 0) options.logger.debug(`${sweep.name} deleted`, { deleted });
        } catch (error) {
          options.logger.warn(`${sweep.name} sweep failed; it runs again at the next tick`, { error });
        }
      }
    })().finally(() => {
      running = undefined;
    });
  };
  const timer = setInterval(tick, sweepEveryMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
