import { renameSync, writeFileSync } from "node:fs";

/**
 * Moves a shared test clock (`SVC_CLOCK_FILE`, read by platform's `fileClock` on every call) to `at`, or
 * back to the system time with `null`. Written beside it and renamed over it: written in place, a process
 * reading between the truncate and the write saw an empty file, the system time, days before the test's
 * instant (signing then took its key for not yet published and dropped its private half).
 */
export function writeClockFile(path: string, at: Date | string | null): void {
  const next = `${path}.next`;
  writeFileSync(next, at === null ? "" : new Date(at).toISOString());
  renameSync(next, path);
}
