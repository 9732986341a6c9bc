import { Migration } from "@svc/platform";

/**
 * Claims name the dispatcher that holds them (delivery/dispatcher-instances.ts): each running process
 * has a row, renewed on a heartbeat, and holds an advisory lock while it lives; a dispatcher that
 * finds another one gone gives that one's claims back at once instead of waiting for their leases.
 */
export class DispatcherInstances extends Migration {
  override up(): void {
    this.addSql(`create table "dispatcher_instances" (
      "id" uuid primary key,
      "lock_key" integer not null check ("lock_key" >= 0),
      "started_at" timestamptz not null,
      "heartbeat_at" timestamptz not null)`);
    this.addSql(`alter table "deliveries" add column "claimed_by" uuid null`);
    // Releasing a gone dispatcher's claims walks only the pending deliveries that name a holder.
    this.addSql(
      `create index "deliveries_claimed_by" on "deliveries" ("claimed_by", "id") where "claimed_by" is not null and "status" = 'pending'`,
    );
  }
}
