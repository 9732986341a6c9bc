import { createHmac, type KeyObject } from "node:crypto";

/**
 * A person's pairwise id for one agent: HMAC-SHA256 under AGENTLINK_OPAQUE_ID_KEY of the agent id and
 * the person's svc_user_id, base64url (43 characters, within the spec's 4-64). Stable for one agent and
 * one person; unrelated across agents; without the key, nobody holding a list of them can tell whose
 * they are or join them across agents.
 */
export const opaqueIdFor = (key: KeyObject, agentId: string, svcUserId: string): string =>
  createHmac("sha256", key).update(`${agentId}:${svcUserId}`).digest("base64url");

/**
 * What the binding row keeps to find itself from an agent's `opaque_id`: a keyed hash of it, never the id
 * itself, so a copy of the table cannot be joined with the ids agents hold. The prefix keeps it apart
 * from `opaqueIdFor`'s inputs, which start with a uuid.
 */
export const opaqueIdLookup = (key: KeyObject, opaqueId: string): string =>
  createHmac("sha256", key).update(`lookup:${opaqueId}`).digest("base64url");
