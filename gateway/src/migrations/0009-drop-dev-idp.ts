import { Migration } from "@svc/platform";

/**
 * The development identity provider's key (0003) and codes (0006) were the gateway's while it ran the
 * provider itself; it is a development-only process of its own now (deploy/dev-idp), which keeps none.
 */
export class DropDevIdentityProviderTables extends Migration {
  override up(): void {
    this.addSql(`drop table if exists "dev_idp_codes"`);
    this.addSql(`drop table if exists "dev_idp_keys"`);
  }
}
