import { Migration } from "@svc/platform";

/**
 * Retention (`messages/retention.ts`) finds old messages by arrival. Their deliveries go with them (on
 * delete cascade), found by the unique (message_id, endpoint_id) index of 0001.
 */
export class MessageRetention extends Migration {
  override up(): void {
    this.addSql(`create index "messages_by_received" on "messages" ("received_at")`);
  }
}
