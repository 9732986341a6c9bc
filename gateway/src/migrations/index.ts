import { CreateCredentialTables } from "./0001-credentials.ts";
import { CreateRateLimitTables } from "./0002-rate-limits.ts";
import { CreateDevIdentityProviderKeys } from "./0003-dev-idp.ts";
import { CreateRateDecisionFunction } from "./0004-rate-decisions.ts";
import { DropTakeRateLimits } from "./0005-drop-take-rate-limits.ts";
import { CreateDevIdentityProviderCodes } from "./0006-dev-idp-codes.ts";
import { CreateIdempotencyKeys } from "./0007-idempotency-keys.ts";
import { IndexRateLimitExpiry } from "./0008-rate-limit-sweep.ts";
import { DropDevIdentityProviderTables } from "./0009-drop-dev-idp.ts";
import { CreateTokenChecks } from "./0010-token-checks.ts";
import { AddRateCounterLimits } from "./0011-rate-counter-limits.ts";

/** Applied in order at start; a migration, once released, is never edited (add a new one). */
export const migrations = [
  { name: "0001_credentials", class: CreateCredentialTables },
  { name: "0002_rate_limits", class: CreateRateLimitTables },
  { name: "0003_dev_idp", class: CreateDevIdentityProviderKeys },
  { name: "0004_rate_decisions", class: CreateRateDecisionFunction },
  { name: "0005_drop_take_rate_limits", class: DropTakeRateLimits },
  { name: "0006_dev_idp_codes", class: CreateDevIdentityProviderCodes },
  { name: "0007_idempotency_keys", class: CreateIdempotencyKeys },
  { name: "0008_rate_limit_sweep", class: IndexRateLimitExpiry },
  { name: "0009_drop_dev_idp", class: DropDevIdentityProviderTables },
  { name: "0010_token_checks", class: CreateTokenChecks },
  { name: "0011_rate_counter_limits", class: AddRateCounterLimits },
];
