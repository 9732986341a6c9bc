import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type EnvironmentName, environmentProto } from "@svc/platform";
import { KeyType } from "@svc/proto/console/v1/console_pb.js";
import { type CommandGroup, stringList, stringValue, UsageError } from "../command.ts";
import { environmentName, instant, keyTypeName } from "./format.ts";

export const keyCommands: CommandGroup = {
  name: "key",
  summary: "Secret API keys (server calls) and site keys (browser calls from allowed origins).",
  commands: [
    {
      name: "create",
      summary: 'Issues a key; prints {"key","key_id","display_prefix"}.',
      details:
        "The key is shown only this once; the gateway keeps a keyed hash. A site key needs at least one --origin.",
      options: {
        org: { type: "string", required: true, valueName: "ID", description: "organization id" },
        env: {
          type: "string",
          required: true,
          choices: ["development", "production"],
          description: "environment the key selects",
        },
        type: {
          type: "string",
          required: true,
          choices: ["secret", "site"],
          description: "secret key (svc_dev_/svc_production_) or site key (pk_test_/pk_live_)",
        },
        origin: {
          type: "string",
          multiple: true,
          valueName: "URL",
          description: "allowed origin of a site key, scheme://host[:port]",
        },
        gate: {
          type: "string",
          multiple: true,
          valueName: "KEY",
          description: "gate key the key may use; none means every gate",
        },
        "expires-at": { type: "string", valueName: "ISO-8601", description: "expiry of a secret key" },
      },
      async run(values, ctx) {
        const expiresText = stringValue(values, "expires-at");
        const expiresAt = expiresText === undefined ? undefined : new Date(expiresText);
        if (expiresAt && Number.isNaN(expiresAt.getTime()))
          throw new UsageError(`--expires-at is not an ISO 8601 instant: ${expiresText}`);
        const response = await ctx.console().createKey({
          organizationId: values.org as string,
          environment: environmentProto(values.env as EnvironmentName),
          type: values.type === "site" ? KeyType.SITE : KeyType.SECRET,
          allowedOrigins: stringList(values, "origin"),
          allowedGates: stringList(values, "gate"),
          ...(expiresAt && { expiresAt: timestampFromDate(expiresAt) }),
        });
        return { key: response.key, key_id: response.keyId, display_prefix: response.displayPrefix };
      },
    },
    {
      name: "revoke",
      summary: 'Revokes a key at once; prints {"key_id","revoked_at"}. Revoking again keeps the first time.',
      options: {
        "key-id": {
          type: "string",
          required: true,
          valueName: "ID",
          description: "id of the key (from key create or key list)",
        },
      },
      async run(values, ctx) {
        const response = await ctx.console().revokeKey({ keyId: values["key-id"] as string });
        return { key_id: response.keyId, revoked_at: instant(response.revokedAt) };
      },
    },
    {
      name: "limits",
      summary: 'Sets one rate-limit bucket of a key; prints {"key_id","limits":[...]} with every bucket\'s limit now.',
      details:
        "Buckets: per_minute (burst), hourly, daily, in_flight for development secret keys; per_minute, hourly, daily for production secret keys; per_minute, daily, per_ip for site keys. --limit 0 returns the bucket to its default. Every gateway replica applies it from the next request on.",
      options: {
        "key-id": {
          type: "string",
          required: true,
          valueName: "ID",
          description: "id of the key (from key create or key list)",
        },
        bucket: { type: "string", required: true, valueName: "NAME", description: "the bucket to set" },
        limit: {
          type: "string",
          required: true,
          valueName: "N",
          description: "requests per window (in_flight: at once); 0 for the default",
        },
      },
      async run(values, ctx) {
        const limit = Number(values.limit);
        if (!/^\d+$/.test(String(values.limit)) || limit > 0xffff_ffff)
          throw new UsageError(`--limit must be a whole number up to 4294967295, not ${JSON.stringify(values.limit)}`);
        const response = await ctx
          .console()
          .setKeyLimits({ keyId: values["key-id"] as string, bucket: values.bucket as string, limit });
        return {
          key_id: response.keyId,
          limits: response.limits.map((l) => ({
            bucket: l.bucket,
            limit: l.limit,
            ...(l.windowSeconds > 0 && { window_seconds: l.windowSeconds }),
            raised: l.raised,
          })),
        };
      },
    },
    {
      name: "list",
      summary: 'Lists an organization\'s keys, oldest first; prints {"keys":[...]} (never the secrets).',
      options: { org: { type: "string", required: true, valueName: "ID", description: "organization id" } },
      async run(values, ctx) {
        const response = await ctx.console().listKeys({ organizationId: values.org as string });
        return {
          keys: response.keys.map((key) => ({
            key_id: key.keyId,
            type: keyTypeName(key.type),
            environment: environmentName(key.environment),
            display_prefix: key.displayPrefix,
            allowed_origins: key.allowedOrigins,
            allowed_gates: key.allowedGates,
            revoked: key.revoked,
            created_at: instant(key.createdAt),
          })),
        };
      },
    },
  ],
};
