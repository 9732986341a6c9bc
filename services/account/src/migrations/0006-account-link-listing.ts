import { Migration } from "@svc/platform";

class IndexAccountLinkListing extends Migration {
  override up(): void {
    // The secured-accounts list: one platform's links newest first, walked in index order for a page
    // (a status filter is applied on the way) and counted from the same range.
    this.addSql(
      `create index "account_link_listing" on "account_link" ("organization_id", "environment", "secured_at" desc, "id" desc)`,
    );
    // The list by reference finds every link of the account, unlinked ones too (the partial unique
    // index of 0005 holds only the active one).
    this.addSql(`create index "account_link_ref" on "account_link" ("organization_id", "environment", "ref_hash")`);
  }
}

export const indexAccountLinkListing = { name: "0006_account_link_listing", class: IndexAccountLinkListing };
