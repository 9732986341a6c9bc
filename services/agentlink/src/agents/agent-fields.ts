import { refuse } from "../refusal.ts";
import { agentNameForm } from "./agent-key.ts";

const maxDisplayName = 80;
const maxCategory = 80;
const maxCategories = 50;
const maxAvatarAsset = 512;
const maxUrl = 2048;

export interface AgentFields {
  name: string;
  displayName: string;
  avatarAsset: string | null;
  categories: string[];
  callbackUrl: string | null;
}

/** What an operator gives at registration, checked; the display name defaults to the name. */
export function agentFields(input: {
  name: string;
  displayName?: string;
  avatarAsset?: string;
  categories: readonly string[];
  callbackUrl?: string;
}): AgentFields {
  if (!agentNameForm.test(input.name))
    throw refuse("invalid_argument", `name must be 3-40 letters, digits, _ or -: ${JSON.stringify(input.name)}`);
  const displayName = input.displayName || input.name;
  if (displayName.trim() === "" || displayName.length > maxDisplayName)
    throw refuse("invalid_argument", `display name must be 1-${maxDisplayName} characters and not blank`);
  const categories = [...new Set(input.categories)];
  if (categories.length === 0 || categories.length > maxCategories)
    throw refuse("invalid_argument", `an agent needs 1-${maxCategories} action categories`);
  for (const category of categories)
    if (category.trim() === "" || category.length > maxCategory)
      throw refuse("invalid_argument", `each category must be 1-${maxCategory} characters and not blank`);
  const avatarAsset = input.avatarAsset || null;
  if (avatarAsset !== null && avatarAsset.length > maxAvatarAsset)
    throw refuse("invalid_argument", `avatar asset must be at most ${maxAvatarAsset} characters`);
  return {
    name: input.name,
    displayName,
    avatarAsset,
    categories,
    callbackUrl: input.callbackUrl ? callbackUrl(input.callbackUrl) : null,
  };
}

/**
 * An absolute http or https URL without credentials. Where it may point (no private addresses in
 * production) is the delivery engine's SSRF guard's call, at connection time.
 */
function callbackUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse("invalid_argument", `callback URL must be an absolute http or https URL: ${raw}`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw refuse("invalid_argument", `callback URL must be http or https: ${raw}`);
  if (url.username || url.password) throw refuse("invalid_argument", "callback URL must not carry credentials");
  if (url.href.length > maxUrl) throw refuse("invalid_argument", `callback URL is longer than ${maxUrl} characters`);
  return url.href;
}
