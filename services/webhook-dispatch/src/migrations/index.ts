import { CreateWebhookTables } from "./0001-webhook-tables.ts";

/** Applied in order at start; a migration, once released, is never edited (add a new one). */
export const migrations = [{ name: "0001_webhook_tables", class: CreateWebhookTables }];
