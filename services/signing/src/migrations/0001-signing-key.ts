import { Migration } from "@svc/platform";

class CreateSigningKey extends Migration {
  override up(): void {
    this.addSql(`create table "signing_key" (
      "kid" text primary key,
      "x" text not null,
      "y" text not null,
      "sealed_private_key" bytea not null,
      "kek_id" text not null,
      "published_at" timestamptz not null,
      "signs_from" timestamptz not null,
      "retired_at" timestamptz null,
      "unpublish_at" timestamptz null)`);
  }
}

export const createSigningKey = { name: "0001_signing_key", class: CreateSigningKey };
