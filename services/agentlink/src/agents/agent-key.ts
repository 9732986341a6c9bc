import { randomBytes } from "node:crypto";

/**
 * Agent keys, `svc_agent_<Name>__<secret>` (decisions.md "Agent keys"): the agent's registered name,
 * then 32 random bytes as base64url without padding. The name and the secret may both hold `_`, so a
 * key is read from its end: the secret is always exactly 43 characters.
 */
const agentKeyPrefix = "svc_agent_";
const secretBytes = 32;
const secretLength = 43;
const separator = "__";

/** Letters, digits, `_` and `-`; 3-40 characters. */
export const agentNameForm = /^[A-Za-z0-9_-]{3,40}$/;
const secretForm = /^[A-Za-z0-9_-]{43}$/;

export interface ParsedAgentKey {
  name: string;
  secret: string;
}

/** Name and secret of a key; undefined unless the whole value is exactly the issued form. */
export function parseAgentKey(key: string): ParsedAgentKey | undefined {
  if (!key.startsWith(agentKeyPrefix)) return undefined;
  const body = key.slice(agentKeyPrefix.length);
  const secret = body.slice(-secretLength);
  const name = body.slice(0, -(secretLength + separator.length));
  if (body.slice(name.length, name.length + separator.length) !== separator) return undefined;
  if (!agentNameForm.test(name) || !secretForm.test(secret)) return undefined;
  return { name, secret };
}

export function generateAgentKey(name: string): { key: string; secret: string } {
  const secret = randomBytes(secretBytes).toString("base64url");
  return { key: `${agentKeyPrefix}${name}${separator}${secret}`, secret };
}
