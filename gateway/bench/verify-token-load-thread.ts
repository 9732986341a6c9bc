import { Worker } from "node:worker_threads";
import type { LoadOrder, LoadReport } from "./verify-token-load.ts";

/** The verify-token load on its thread (`verify-token-load.ts`): each order answered by its report. */
export function startVerifyTokenLoad() {
  const load = new Worker(new URL("./verify-token-load.ts", import.meta.url));
  const ask = (order: LoadOrder) =>
    new Promise<LoadReport>((resolve, reject) => {
      const failed = (error: unknown) => {
        load.off("message", answered);
        reject(error);
      };
      const answered = (report: LoadReport) => {
        load.off("error", failed);
        resolve(report);
      };
      load.once("message", answered);
      load.once("error", failed);
      load.postMessage(order);
    });
  return { ask, stop: () => load.terminate() };
}
