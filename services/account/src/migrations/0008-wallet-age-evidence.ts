import { Migration } from "@svc/platform";

class WalletAgeEvidence extends Migration {
  override up(): void {
    // Evidence from a wallet credential is a verdict at a threshold, never a birth date.
    this.addSql(`alter table "age_evidence" alter column "birth_date" drop not null`);
    this.addSql(`alter table "age_evidence"
      add column "issuer" text,
      add column "threshold" integer check ("threshold" between 1 and 150),
      add column "result" text check ("result" in ('over', 'under')),
      add column "valid_until" timestamptz`);
    this.addSql(`alter table "age_evidence" add constraint "age_evidence_date_or_verdict" check (
      ("birth_date" is not null and "threshold" is null and "result" is null)
      or ("birth_date" is null and "issuer" is not null and "threshold" is not null and "result" is not null and "valid_until" is not null))`);
    // One OpenID4VP presentation request: bound to a gate request, or to a human ahead of time. Its
    // verdict waits here until the request is confirmed, and then belongs to the human who confirmed.
    this.addSql(`create table "age_presentation" (
      "id" text primary key,
      "svc_user_id" uuid references "human" ("id") on delete cascade,
      "request_id" text,
      "thresholds" integer[] not null,
      "nonce" text not null,
      "client_id" text not null,
      "state" text not null check ("state" in ('pending', 'accepted')),
      "last_refusal" text,
      "created_at" timestamptz not null,
      "expires_at" timestamptz not null,
      "issuer" text,
      "threshold" integer,
      "result" text check ("result" in ('over', 'under')),
      "valid_until" timestamptz,
      "verified_at" timestamptz,
      check ("svc_user_id" is not null or "request_id" is not null))`);
    this.addSql(`create index "age_presentation_by_request" on "age_presentation" ("request_id", "created_at" desc)`);
  }
}

export const addWalletAgeEvidence = { name: "0008_wallet_age_evidence", class: WalletAgeEvidence };
