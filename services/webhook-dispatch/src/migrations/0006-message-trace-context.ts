import { Migration } from "@svc/platform";

/** The trace of the event a message came from, which each of its deliveries continues (platform event-tracing.ts). */
export class MessageTraceContext extends Migration {
  override up(): void {
    this.addSql(`alter table "messages" add column "trace_context" text null`);
  }
}
