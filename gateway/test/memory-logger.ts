import type { LogFields, Logger } from "@svc/platform";

export interface LogEntry extends LogFields {
  level: string;
  msg: string;
}

/** A logger that keeps its entries, so tests stay quiet and can check what was logged. */
export function memoryLogger(entries: LogEntry[] = [], base: LogFields = {}): Logger & { entries: LogEntry[] } {
  const write =
    (level: string) =>
    (msg: string, fields: LogFields = {}) =>
      void entries.push({ ...base, ...fields, level, msg });
  return {
    entries,
    debug: write("debug"),
    info: write("info"),
    warn: write("warn"),
    error: write("error"),
    child: (fields) => memoryLogger(entries, { ...base, ...fields }),
  };
}
