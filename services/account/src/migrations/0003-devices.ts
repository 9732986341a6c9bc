import { Migration } from "@svc/platform";

class CreateDevices extends Migration {
  override up(): void {
    this.addSql(`create table "device" (
      "id" uuid primary key,
      "svc_user_id" uuid not null references "human" ("id") on delete cascade,
      "platform" text not null check ("platform" in ('ios', 'android', 'web', 'sandbox')),
      "push_token" text null unique,
      "registered_at" timestamptz not null,
      check (("platform" = 'sandbox') = ("push_token" is null)))`);
    this.addSql(`create index "device_by_human" on "device" ("svc_user_id", "registered_at")`);
  }
}

export const createDevices = { name: "0003_devices", class: CreateDevices };
