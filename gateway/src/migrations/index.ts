import { CreateCredentialTables } from "./0001-credentials.ts";
import { CreateRateLimitTables } from "./0002-rate-limits.ts";
import { CreateDevIdentityProviderKeys } from "./0003-dev-idp.ts";
import { CreateRateDecisionFunction } from "./0004-rate-decisions.ts";

/** Applied in order at start; a migration, once released, is never edited (add a new one). */
export const migrations = [
  { name: "0001_credentials", class: CreateCredentialTables },
  { name: "0002_rate_limits", class: CreateRateLimitTables },
  { name: "0003_dev_idp", class: CreateDevIdentityProviderKeys },
  { name: "0004_rate_decisions", class: CreateRateDecisionFunction },
];
