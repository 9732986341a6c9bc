import { createSecretKey, type KeyObject } from "node:crypto";
import type { MikroORM } from "@mikro-orm/postgresql";
import { type Clock, constantTimeEqual, type EnvironmentName, keyedHash, uuid } from "@svc/platform";
import { ApiKey, Organization } from "./entities.ts";
import { displayPrefix, generateKey, hashInput, type KeyType, parseKey } from "./key-format.ts";

/** A request the directory refuses: `invalid` input, or something `not_found`. */
export class CredentialError extends Error {
  readonly reason: "invalid" | "not_found";
  constructor(reason: "invalid" | "not_found", message: string) {
    super(message);
    this.name = "CredentialError";
    this.reason = reason;
  }
}

export interface NewKey {
  organizationId: string;
  environment: EnvironmentName;
  type: KeyType;
  allowedOrigins: readonly string[];
  allowedGates: readonly string[];
  expiresAt?: Date | undefined;
}

const uuidText = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const originText = /^https?:\/\/[^/?#@\s]+$/i;
const gateKeyText = /^\S{1,200}$/;

/**
 * A site key's allowed origin as the browser sends it in `Origin` (scheme://host[:port], lower case,
 * default port dropped); undefined when the text is not such an origin (a path, a query, credentials).
 */
export function normalizeOrigin(text: string): string | undefined {
  if (!originText.test(text)) return undefined;
  try {
    const origin = new URL(text).origin;
    return origin === "null" ? undefined : origin;
  } catch {
    return undefined;
  }
}

function requireUuid(value: string, name: string): void {
  if (!uuidText.test(value)) throw new CredentialError("invalid", `${name} must be a UUID`);
}

/** Organizations and their API keys: issue, revoke, list, and recognise a presented key. */
export class CredentialDirectory {
  readonly #orm: MikroORM;
  readonly #pepper: KeyObject;
  readonly #clock: Clock;

  constructor(options: { orm: MikroORM; pepper: Buffer; clock: Clock }) {
    this.#orm = options.orm;
    this.#pepper = createSecretKey(options.pepper);
    this.#clock = options.clock;
  }

  async createOrganization(name: string): Promise<Organization> {
    const trimmed = name.trim();
    if (trimmed === "" || trimmed.length > 200) throw new CredentialError("invalid", "name must be 1-200 characters");
    const em = this.#orm.em.fork();
    const organization = em.create(Organization, { id: uuid(), name: trimmed, createdAt: this.#clock.now() });
    await em.flush();
    return organization;
  }

  /** The names of these organizations by id (for the app, which shows a partner by its name); unknown ids are absent. */
  async organizationNames(ids: readonly string[]): Promise<Map<string, string>> {
    const wanted = [...new Set(ids)].filter((id) => uuidText.test(id));
    if (wanted.length === 0) return new Map();
    const found = await this.#orm.em.fork().find(Organization, { id: { $in: wanted } });
    return new Map(found.map((organization) => [organization.id, organization.name]));
  }

  /** Issues a key; the returned `key` is the only time the secret exists outside the caller's hands. */
  async createKey(request: NewKey): Promise<{ key: string; record: ApiKey }> {
    requireUuid(request.organizationId, "organization_id");
    const allowedOrigins = this.#checkOrigins(request);
    const allowedGates = [...new Set(request.allowedGates)];
    const badGate = allowedGates.find((g) => !gateKeyText.test(g));
    if (badGate !== undefined)
      throw new CredentialError(
        "invalid",
        `allowed gate ${JSON.stringify(badGate)} is not a gate key (1-200 characters, no spaces)`,
      );
    if (request.expiresAt !== undefined) {
      if (request.type !== "secret") throw new CredentialError("invalid", "only secret keys expire");
      if (request.expiresAt.getTime() <= this.#clock.now().getTime())
        throw new CredentialError("invalid", "expires_at must be in the future");
    }

    const em = this.#orm.em.fork();
    if (!(await em.findOne(Organization, { id: request.organizationId })))
      throw new CredentialError("not_found", `no organization ${request.organizationId}`);
    const { key, parsed } = generateKey(request.type, request.environment);
    const record = em.create(ApiKey, {
      id: uuid(),
      organizationId: request.organizationId,
      environment: request.environment,
      type: request.type,
      keyHash: keyedHash(this.#pepper, hashInput(parsed)),
      displayPrefix: displayPrefix(parsed),
      allowedOrigins,
      allowedGates,
      createdAt: this.#clock.now(),
      expiresAt: request.expiresAt ?? null,
      revokedAt: null,
    });
    await em.flush();
    return { key, record };
  }

  #checkOrigins(request: NewKey): string[] {
    if (request.type === "secret") {
      if (request.allowedOrigins.length > 0)
        throw new CredentialError("invalid", "allowed origins apply to site keys only");
      return [];
    }
    if (request.allowedOrigins.length === 0)
      throw new CredentialError("invalid", "a site key needs at least one allowed origin");
    const origins = request.allowedOrigins.map((text) => {
      const origin = normalizeOrigin(text);
      if (!origin)
        throw new CredentialError(
          "invalid",
          `allowed origin ${JSON.stringify(text)} is not scheme://host[:port] (http or https, no path)`,
        );
      return origin;
    });
    return [...new Set(origins)];
  }

  /** Revoking twice keeps the first revocation time. */
  async revokeKey(keyId: string): Promise<ApiKey> {
    requireUuid(keyId, "key_id");
    const em = this.#orm.em.fork();
    const record = await em.findOne(ApiKey, { id: keyId });
    if (!record) throw new CredentialError("not_found", `no key ${keyId}`);
    if (!record.revokedAt) {
      record.revokedAt = this.#clock.now();
      await em.flush();
    }
    return record;
  }

  async listKeys(organizationId: string): Promise<ApiKey[]> {
    requireUuid(organizationId, "organization_id");
    const em = this.#orm.em.fork();
    if (!(await em.findOne(Organization, { id: organizationId })))
      throw new CredentialError("not_found", `no organization ${organizationId}`);
    return em.find(ApiKey, { organizationId }, { orderBy: { createdAt: "asc", id: "asc" } });
  }

  /** The keyed hash a presented credential is stored under, or undefined when it has no key's form. */
  keyHashOf(credential: string): Buffer | undefined {
    const parsed = parseKey(credential);
    return parsed && keyedHash(this.#pepper, hashInput(parsed));
  }

  /** The key a presented credential names (revoked and expired included: the caller decides), if any. */
  async findKey(credential: string): Promise<ApiKey | undefined> {
    const hash = this.keyHashOf(credential);
    return hash && this.findKeyByHash(hash);
  }

  /** The key stored under `hash` (from {@link keyHashOf}), if any. */
  async findKeyByHash(hash: Buffer): Promise<ApiKey | undefined> {
    const record = await this.#orm.em.fork().findOne(ApiKey, { keyHash: hash });
    if (!record || !constantTimeEqual(Buffer.from(record.keyHash), hash)) return undefined;
    // The hash covers type and environment, so a match is always of the presented form.
    return record;
  }
}
