/** Structured JSON logs, one object a line, so an operator's log pipeline can index them. */
export type LogFields = Record<string, unknown>;
type Level = "debug" | "info" | "warn" | "error";

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

const order: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

function serialize(value: unknown): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack };
  return value;
}

export function createLogger(
  service: string,
  base: LogFields = {},
  minimum: Level = (process.env.SVC_LOG_LEVEL as Level) ?? "info",
): Logger {
  const write = (level: Level, msg: string, fields?: LogFields) => {
    if (order[level] < (order[minimum] ?? 20)) return;
    const entry: LogFields = { time: new Date().toISOString(), level, service, msg, ...base };
    for (const [k, v] of Object.entries(fields ?? {})) entry[k] = serialize(v);
    process.stdout.write(`${JSON.stringify(entry)}\n`);
  };
  return {
    debug: (m, f) => write("debug", m, f),
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warn", m, f),
    error: (m, f) => write("error", m, f),
    child: (fields) => createLogger(service, { ...base, ...fields }, minimum),
  };
}
