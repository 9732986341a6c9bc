import { Migration } from "@svc/platform";

export class CreateParkedEvents extends Migration {
  override up(): void {
    // Events of a type this build does not know, kept byte for byte until a build that knows the type starts.
    this.addSql(`create table "parked_events" (
      "dedup_key" text primary key,
      "subject" text not null,
      "envelope" bytea not null,
      "parked_at" timestamptz not null)`);
  }
}
