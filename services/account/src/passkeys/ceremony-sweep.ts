import type { MikroORM } from "@mikro-orm/postgresql";
import type { Clock, Logger } from "@svc/platform";
import { deleteOldCeremonies } from "./ceremonies.ts";

const sweepEveryMs = 10 * 60_000;

/** Deletes long-dead ceremonies on a real-time timer; what counts as dead is read from the injected clock. */
export function startCeremonySweep(options: { orm: MikroORM; clock: Clock; logger: Logger }): () => Promise<void> {
  let running: Promise<void> | undefined;
  const sweep = () => {
    running ??= deleteOldCeremonies(options.orm.em.fork(), options.clock.now())
      .then(
        (deleted) => void (deleted > 0 && options.logger.debug("old passkey ceremonies deleted", { deleted })),
        (error: unknown) =>
          options.logger.warn("passkey ceremony sweep failed; it runs again at the next tick", { error }),
      )
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(sweep, sweepEveryMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
