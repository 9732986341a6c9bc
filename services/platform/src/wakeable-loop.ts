export interface WakeableLoop {
  /** Run the work again as soon as the current run ends, instead of waiting for the next poll. */
  wake(): void;
  /** Ends the loop after the run in progress, if any. */
  stop(): Promise<void>;
}

/**
 * Background work that polls its table: `work` runs again at once while it reports more to do or
 * after a `wake()`, otherwise after `pollMs`. The poll is what still finds rows a crashed peer left.
 */
export function startWakeableLoop(options: {
  pollMs: number;
  work: () => Promise<boolean>;
  onError: (error: unknown) => void;
}): WakeableLoop {
  let running = true;
  let woken = false;
  let wakeUp: (() => void) | undefined;

  const loop = async () => {
    while (running) {
      let more = false;
      // A wake that ended the wait is this run's; only one during the run asks for another.
      woken = false;
      try {
        more = await options.work();
      } catch (error) {
        options.onError(error);
      }
      if (!running) break;
      if (more || woken) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, options.pollMs);
        wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wakeUp = undefined;
    }
  };
  const done = loop();

  return {
    wake() {
      woken = true;
      wakeUp?.();
    },
    async stop() {
      running = false;
      wakeUp?.();
      await done;
    },
  };
}
