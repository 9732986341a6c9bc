import { createSigningKey } from "./0001-signing-key.ts";
import { createTokenCheck } from "./0002-token-check.ts";

export const migrations = [createSigningKey, createTokenCheck];
