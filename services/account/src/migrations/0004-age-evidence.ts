import { Migration } from "@svc/platform";

class CreateAgeEvidence extends Migration {
  override up(): void {
    this.addSql(`create table "age_evidence" (
      "id" bigserial primary key,
      "svc_user_id" uuid not null references "human" ("id") on delete cascade,
      "birth_date" date not null,
      "source" text not null check ("source" <> ''),
      "recorded_at" timestamptz not null)`);
    this.addSql(`create index "age_evidence_newest" on "age_evidence" ("svc_user_id", "recorded_at" desc, "id" desc)`);
  }
}

export const createAgeEvidence = { name: "0004_age_evidence", class: CreateAgeEvidence };
