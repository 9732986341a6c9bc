import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import { environmentProto } from "@svc/platform";
import { type Caller, CallerSchema, CredentialKind } from "@svc/proto/common/v1/caller_pb.js";
import {
  AuthenticateGrantResponseSchema,
  ConfirmRequestResponseSchema,
  CreateSessionResponseSchema,
  CreateVerificationLinkResponseSchema,
  DeclineRequestResponseSchema,
  GateService,
  GetPartnerConfigResponseSchema,
  GetRequestStateResponseSchema,
  GetVerificationStatusResponseSchema,
  ListPendingRequestsResponseSchema,
  LogoutResponseSchema,
  OpenRequestResponseSchema,
  GateType as ProtoGateType,
  ReportFailureResponseSchema,
  type RequestAccess,
  RevokeVerificationResponseSchema,
} from "@svc/proto/gate/v1/gate_pb.js";
import { partnerCaller } from "./caller.ts";
import type { Access } from "./ceremony/ceremony.ts";
import type { GateType } from "./gates/gate-store.ts";
import { refusalsAsConnectErrors, refuse } from "./refusal.ts";
import { requestLifetimeMs } from "./requests/lifetimes.ts";
import type { GateServices } from "./services.ts";
import type { SessionRow } from "./sessions/session-facts.ts";

export const gateTypeProto = (type: GateType): ProtoGateType =>
  type === "age" ? ProtoGateType.AGE : ProtoGateType.HUMAN;

const access = (value: RequestAccess | undefined): Access => ({
  flowSecret: value?.flowSecret ?? "",
  svcUserId: value?.svcUserId ?? "",
});

/** The caller a grant token stands for: its session's organization and environment, the session as credential. */
const grantCaller = (session: SessionRow): Caller =>
  create(CallerSchema, {
    organizationId: session.organization_id,
    environment: environmentProto(session.environment),
    credentialId: session.id,
    credentialKind: CredentialKind.GRANT_TOKEN,
  });

/** Thin handlers: they translate messages and refusals; the rules live in the domain modules. */
export function gateRoutes(services: GateServices): (router: ConnectRouter) => void {
  const { sessions, queries, ceremony } = services;
  return (router) =>
    router.service(GateService, {
      createSession: (request) =>
        refusalsAsConnectErrors(async () => {
          const caller = partnerCaller(request.caller, ["secret_key", "site_key"]);
          const session = await sessions.create(caller, {
            partnerUserId: request.partnerUserId,
            metadata: request.metadata,
            allowedGates: request.allowedGates,
          });
          return create(CreateSessionResponseSchema, {
            anchorGrantToken: session.token,
            organizationId: session.organizationId,
            expiresAt: timestampFromDate(session.expiresAt),
          });
        }),

      authenticateGrant: (request) =>
        refusalsAsConnectErrors(async () => {
          const session = await sessions.authenticate(request.anchorGrantToken, request.idempotencyToken);
          return create(AuthenticateGrantResponseSchema, {
            caller: grantCaller(session),
            allowedGates: session.allowed_gates,
          });
        }),

      createVerificationLink: (request) =>
        refusalsAsConnectErrors(async () => {
          // Given the token, it is authenticated here: the gateway then makes this one call, not two.
          const granted =
            request.anchorGrantToken === ""
              ? request.caller
              : grantCaller(await sessions.forCreate(request.anchorGrantToken, request.idempotencyToken));
          const caller = partnerCaller(granted, ["grant_token"]);
          const link = await services.createVerificationLink(caller, {
            gate: request.gate,
            returnUrl: request.returnUrl,
            mode: request.mode,
            svcUserId: request.svcUserId,
            partnerUserRef: request.partnerUserRef,
            parentRequestId: request.parentRequestId,
            metadata: request.metadata,
            notarize: request.notarize,
            idempotencyToken: request.idempotencyToken,
          });
          return create(CreateVerificationLinkResponseSchema, {
            requestId: link.requestId,
            status: link.status,
            flowSecret: link.flowSecret,
            expiresAt: timestampFromDate(link.expiresAt),
            pushedToDevices: link.pushedToDevices,
            sdkType: link.sdkType,
            authMode: link.authMode,
            gate: link.gate.key,
            organizationId: link.gate.organizationId,
            gateType: gateTypeProto(link.gate.type),
            ...(link.gate.ageThreshold !== null ? { ageThreshold: link.gate.ageThreshold } : {}),
            caller: granted,
          });
        }),

      getVerificationStatus: (request) =>
        refusalsAsConnectErrors(async () => {
          const record = await queries.status(
            partnerCaller(request.caller, ["secret_key", "site_key"]),
            request.requestId,
          );
          return create(GetVerificationStatusResponseSchema, {
            found: record.found,
            status: record.status,
            message: record.message,
            trusted: record.trusted,
            firstTime: record.firstTime,
            reason: record.reason,
            ageVerdict: record.ageVerdict,
            token: record.token,
            ...(record.expiresAt ? { expiresAt: timestampFromDate(record.expiresAt) } : {}),
          });
        }),

      revokeVerification: (request) =>
        refusalsAsConnectErrors(async () => {
          const count = await queries.revoke(
            partnerCaller(request.caller, ["secret_key", "site_key"]),
            request.gate,
            request.partnerUserId,
            request.allowedGates,
          );
          return create(RevokeVerificationResponseSchema, { revokedCount: count });
        }),

      logout: (request) =>
        refusalsAsConnectErrors(async () => {
          const revoked = await sessions.revoke(
            partnerCaller(request.caller, ["secret_key", "site_key"]),
            request.anchorGrantToken,
          );
          return create(LogoutResponseSchema, { revoked });
        }),

      getPartnerConfig: (request) =>
        refusalsAsConnectErrors(async () => {
          const gate = await queries.partnerConfig(
            partnerCaller(request.caller, ["secret_key", "site_key"]),
            request.gate,
            request.allowedGates,
          );
          return create(GetPartnerConfigResponseSchema, {
            gate: gate.key,
            gateType: gateTypeProto(gate.type),
            ...(gate.ageThreshold !== null ? { ageThreshold: gate.ageThreshold } : {}),
            status: gate.status,
            notarizeOffered: gate.notarizeOffer,
            organizationId: gate.organizationId,
            requestLifetimeSeconds: requestLifetimeMs / 1000,
          });
        }),

      openRequest: (request) =>
        refusalsAsConnectErrors(async () => {
          if (request.rpId === "" || request.origin === "") throw refuse("invalid", "rp_id and origin are required");
          const opened = await ceremony.open(request.requestId, access(request.access), {
            rpId: request.rpId,
            origin: request.origin,
          });
          const row = opened.row;
          return create(OpenRequestResponseSchema, {
            requestId: row.id,
            status: opened.status,
            gate: row.gate_key,
            gateType: gateTypeProto(row.gate_type),
            ...(row.age_threshold !== null ? { ageThreshold: row.age_threshold } : {}),
            organizationId: row.organization_id,
            notarizeOffered: row.notarize_offered,
            authMode: row.mode,
            expiresAt: timestampFromDate(new Date(row.expires_at)),
            ceremonyId: opened.ceremonyId,
            optionsJson: opened.optionsJson,
            svcUserId: row.svc_user_id ?? "",
          });
        }),

      confirmRequest: (request) =>
        refusalsAsConnectErrors(async () => {
          const result = await ceremony.confirm(request.requestId, access(request.access), {
            ceremonyId: request.ceremonyId,
            responseJson: request.responseJson,
          });
          return create(ConfirmRequestResponseSchema, result);
        }),

      declineRequest: (request) =>
        refusalsAsConnectErrors(async () =>
          create(DeclineRequestResponseSchema, await ceremony.decline(request.requestId, access(request.access))),
        ),

      getRequestState: (request) =>
        refusalsAsConnectErrors(async () =>
          create(GetRequestStateResponseSchema, await ceremony.state(request.requestId, access(request.access))),
        ),

      listPendingRequests: (request) =>
        refusalsAsConnectErrors(async () => {
          const rows = await services.pendingRequestsOf(request.svcUserId);
          return create(ListPendingRequestsResponseSchema, {
            requests: rows.map((row) => ({
              requestId: row.id,
              organizationId: row.organization_id,
              gateType: gateTypeProto(row.gate_type),
              ...(row.age_threshold !== null ? { ageThreshold: row.age_threshold } : {}),
              notarizeOffered: row.notarize_offered,
              expiresAt: timestampFromDate(new Date(row.expires_at)),
              createdAt: timestampFromDate(new Date(row.created_at)),
            })),
          });
        }),

      reportFailure: (request) =>
        refusalsAsConnectErrors(async () =>
          create(
            ReportFailureResponseSchema,
            await ceremony.reportFailure(request.requestId, access(request.access), request.reason),
          ),
        ),
    });
}
