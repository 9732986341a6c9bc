import { Migration } from "@svc/platform";

class MdocPresentations extends Migration {
  override up(): void {
    // Which format answered: the verdict becomes evidence of that source when the request is confirmed.
    this.addSql(`alter table "age_presentation" add column "source" text check ("source" in ('sd-jwt-vc', 'mdoc'))`);
    this.addSql(`update "age_presentation" set "source" = 'sd-jwt-vc' where "state" = 'accepted'`);
    this.addSql(`alter table "age_presentation" add constraint "age_presentation_accepted_has_source"
      check ("state" <> 'accepted' or "source" is not null)`);
    // The sweep reads ended presentations by their end.
    this.addSql(`create index "age_presentation_by_expiry" on "age_presentation" ("expires_at")`);
  }
}

export const addMdocPresentations = { name: "0009_mdoc_presentations", class: MdocPresentations };
