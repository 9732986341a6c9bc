import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { environmentName, environmentProto } from "@svc/platform";
import {
  ConsoleService,
  CreateKeyResponseSchema,
  CreateOrganizationResponseSchema,
  KeySummarySchema,
  ListKeysResponseSchema,
  MintDevSessionResponseSchema,
  KeyType as ProtoKeyType,
  RevokeKeyResponseSchema,
  RotateSigningKeysResponseSchema,
  SetKeyLimitsResponseSchema,
} from "@svc/proto/console/v1/console_pb.js";
import type { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { type CredentialDirectory, CredentialError } from "../credentials/directory.ts";
import type { ApiKey } from "../credentials/entities.ts";
import type { KeyType } from "../credentials/key-format.ts";
import type { KeyLimits } from "../rate-limits/key-limits.ts";
import type { devSessionMinter } from "./dev-sessions.ts";

export interface ConsoleDependencies {
  directory: CredentialDirectory;
  /** Told of a revoked key before the revoke answers: this replica's cache and every other replica's forget it. */
  keyRevoked: (keyId: string) => Promise<void>;
  signing: Pick<Client<typeof SigningService>, "rotateKeys">;
  keyLimits: Pick<KeyLimits, "set">;
  /** Present when GATEWAY_DEV_IDP_ISSUER names a development identity provider (never in production). */
  mintDevSession?: ReturnType<typeof devSessionMinter>;
}

const keyTypeFromProto = (type: ProtoKeyType): KeyType | undefined =>
  type === ProtoKeyType.SECRET ? "secret" : type === ProtoKeyType.SITE ? "site" : undefined;

const keyTypeToProto = (type: KeyType): ProtoKeyType => (type === "secret" ? ProtoKeyType.SECRET : ProtoKeyType.SITE);

/** The operator console (internal port only): thin handlers over the credential directory and signing. */
export function consoleRoutes(deps: ConsoleDependencies): (router: ConnectRouter) => void {
  const { directory, signing, keyLimits } = deps;
  return (router) =>
    router.service(ConsoleService, {
      createOrganization: (request) =>
        translateErrors(async () => {
          const organization = await directory.createOrganization(request.name);
          return create(CreateOrganizationResponseSchema, { organizationId: organization.id });
        }),

      createKey: (request) =>
        translateErrors(async () => {
          const environment = environmentName(request.environment);
          if (!environment)
            throw new ConnectError("environment is required (development or production)", Code.InvalidArgument);
          const type = keyTypeFromProto(request.type);
          if (!type) throw new ConnectError("type is required (secret or site)", Code.InvalidArgument);
          const { key, record } = await directory.createKey({
            organizationId: request.organizationId,
            environment,
            type,
            allowedOrigins: request.allowedOrigins,
            allowedGates: request.allowedGates,
            expiresAt: request.expiresAt ? timestampDate(request.expiresAt) : undefined,
          });
          return create(CreateKeyResponseSchema, { key, keyId: record.id, displayPrefix: record.displayPrefix });
        }),

      revokeKey: (request) =>
        translateErrors(async () => {
          const record = await directory.revokeKey(request.keyId);
          await deps.keyRevoked(record.id);
          return create(RevokeKeyResponseSchema, {
            keyId: record.id,
            ...(record.revokedAt && { revokedAt: timestampFromDate(record.revokedAt) }),
          });
        }),

      listKeys: (request) =>
        translateErrors(async () => {
          const records = await directory.listKeys(request.organizationId);
          return create(ListKeysResponseSchema, { keys: records.map(keySummary) });
        }),

      setKeyLimits: (request) =>
        translateErrors(async () => {
          const limits = await keyLimits.set(request.keyId, request.bucket, request.limit);
          return create(SetKeyLimitsResponseSchema, {
            keyId: request.keyId,
            limits: limits.map((l) => ({
              bucket: l.bucket,
              limit: l.limit,
              windowSeconds: l.windowSeconds ?? 0,
              raised: l.raised,
            })),
          });
        }),

      mintDevSession: async (request) => {
        if (!deps.mintDevSession)
          throw new ConnectError(
            "the development identity provider does not run in production, nor here: GATEWAY_DEV_IDP_ISSUER is not set",
            Code.FailedPrecondition,
          );
        const session = await deps.mintDevSession(request);
        return create(MintDevSessionResponseSchema, {
          sessionToken: session.token,
          expiresAt: timestampFromDate(session.expiresAt),
        });
      },

      rotateSigningKeys: async () => {
        // Signing's own ConnectError passes through unchanged.
        const rotated = await signing.rotateKeys({});
        return create(RotateSigningKeysResponseSchema, {
          kid: rotated.kid,
          signsFrom: rotated.signsFrom,
          keys: rotated.keys,
        });
      },
    });
}

function keySummary(record: ApiKey) {
  return create(KeySummarySchema, {
    keyId: record.id,
    type: keyTypeToProto(record.type),
    environment: environmentProto(record.environment),
    displayPrefix: record.displayPrefix,
    allowedOrigins: record.allowedOrigins,
    allowedGates: record.allowedGates,
    revoked: record.revokedAt !== null && record.revokedAt !== undefined,
    createdAt: timestampFromDate(record.createdAt),
  });
}

async function translateErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof CredentialError)
      throw new ConnectError(error.message, error.reason === "invalid" ? Code.InvalidArgument : Code.NotFound);
    throw error;
  }
}
