import { Migration } from "@svc/platform";

/**
 * The trace context of the inquire that wrote a card (W3C traceparent; null while tracing is off), so that a
 * person's confirm, a later call, continues the card's trace: its proof and resolution event join the inquire's.
 */
class CardTraceContext extends Migration {
  override up(): void {
    this.addSql(`alter table "card" add column "trace_context" text null`);
  }
}

export const cardTraceContext = { name: "0010_card_trace_context", class: CardTraceContext };
