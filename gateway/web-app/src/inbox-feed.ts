import { NotOnThisServer, SignedOut } from "./api.ts";
import type { Card } from "./card-view.ts";
import { sessionToken, signOut } from "./session.ts";

/** A pending gate request naming the person, as the inbox lists it. */
export interface InboxRequest {
  request_id: string;
  platform: { name: string };
  gate_type: "human" | "age";
  age_threshold?: number;
  expires_at: string;
}

export interface InboxNotice {
  notice_id: string;
  kind: "account_revoked" | "relink_offer" | "agent_bound";
  platform?: { name: string };
  agent?: { display_name: string };
  at: string;
}

/** `data.data` of `GET /app/inbox`, and each `inbox` event of `/app/inbox/events`. */
export interface Inbox {
  requests: InboxRequest[];
  cards: Card[];
  notices: InboxNotice[];
}

const reconnectDelayMs = 2000;

/**
 * Follows `/v1/app/inbox/events` (Server-Sent Events read through `fetch`, since EventSource cannot send the
 * bearer), calling `onInbox` with every `inbox` event, and reconnecting after a dropped stream until
 * `signal` aborts. Rejects with NotOnThisServer when the server has no inbox, SignedOut when the session is
 * refused.
 */
export async function followInbox(signal: AbortSignal, onInbox: (inbox: Inbox) => void): Promise<void> {
  while (!signal.aborted) {
    const token = sessionToken();
    if (!token) throw new SignedOut();
    try {
      const response = await fetch("/v1/app/inbox/events", {
        headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" },
        signal,
      });
      if (response.status === 404) throw new NotOnThisServer("/app/inbox/events");
      if (!(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
        const answer = (await response.json().catch(() => undefined)) as
          | { data?: { error?: { statusCode: number } } }
          | undefined;
        if (answer?.data?.error?.statusCode === 401) {
          signOut();
          throw new SignedOut();
        }
        throw new Error(`the inbox answered HTTP ${response.status}`);
      }
      await readEvents(response, onInbox);
    } catch (error) {
      if (error instanceof NotOnThisServer || error instanceof SignedOut || signal.aborted) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, reconnectDelayMs));
  }
}

/** Splits the stream into events (blank-line separated), skipping comment heartbeats. */
async function readEvents(response: Response, onInbox: (inbox: Inbox) => void): Promise<void> {
  if (!response.body) return;
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n?/g, "\n");
    for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = "message";
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const content = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event = content;
        else if (field === "data") data.push(content);
      }
      if (event === "inbox" && data.length > 0) onInbox(JSON.parse(data.join("\n")) as Inbox);
    }
  }
}
