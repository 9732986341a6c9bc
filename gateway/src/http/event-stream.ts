import type { ServerResponse } from "node:http";
import type { EventSink, EventStream } from "./route.ts";

/**
 * Answers with Server-Sent Events (`text/event-stream`): the headers at once, then what `stream` writes,
 * each event `event: <name>` and one `data:` line of JSON (JSON has no raw line breaks), then the end of
 * the response when it returns or throws. Nothing may cache or buffer it.
 */
export async function writeEventStream(
  res: ServerResponse,
  stream: EventStream,
  signal: AbortSignal,
  headers: Record<string, string>,
): Promise<void> {
  res.writeHead(200, {
    ...headers,
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-store",
    "x-accel-buffering": "no",
  });
  res.flushHeaders();
  const sink: EventSink = {
    send: (event, data) => void res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`),
    comment: (text) => void res.write(`: ${text}\n\n`),
  };
  try {
    await stream(sink, signal);
  } finally {
    res.end();
  }
}
