import { closeSync, openSync, readSync } from "node:fs";

/**
 * How long the calling thread has waited, runnable, for a CPU (the kernel's run_delay, in ms). A sample's
 * wall time less what this grew by across it is the time it ran: on a loaded machine a 1 ms operation
 * preempted once waits tens of ms in the run queue, and those stalls, not the code, made a p99.
 * The file stays open and is read from its start each time, so a reading costs one system call.
 */
export function runQueueWait(): { ms(): number; close(): void } {
  const fd = openSync("/proc/thread-self/schedstat", "r");
  const buffer = Buffer.alloc(128);
  return {
    ms() {
      const length = readSync(fd, buffer, 0, buffer.length, 0);
      return Number(buffer.toString("latin1", 0, length).split(" ")[1]) / 1e6;
    },
    close: () => closeSync(fd),
  };
}
