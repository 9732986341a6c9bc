import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

setFlagsFromString("--expose-gc");
/** A full collection on demand, so that each measured arm pays for the garbage it made and none the other's. */
const collectGarbage = runInNewContext("gc") as () => void;

/**
 * CPU microseconds (user + system, every thread of this process) per operation of `work`, which runs
 * `operations`. The heap is collected before (outside the figure) and after (inside it): without that, a
 * collection falls in whichever arm happens to run when the heap fills, and a round's ratio swings by 10%.
 */
export async function cpuPerOp(work: () => Promise<void>, operations: number): Promise<number> {
  collectGarbage();
  const before = process.cpuUsage();
  await work();
  collectGarbage();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / operations;
}

/** The middle value (the upper one of an even count), as every benchmark reports its rounds. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}
