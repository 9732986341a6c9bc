import { CreateCredentialTables } from "./0001-credentials.ts";

/** Applied in order at start; a migration, once released, is never edited (add a new one). */
export const migrations = [{ name: "0001_credentials", class: CreateCredentialTables }];
