import { createSecretKey } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { type Timestamp, timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, type ConnectRouter } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import {
  type Clock,
  currentTraceContext,
  type EventBus,
  environmentName,
  environmentProto,
  type Logger,
  type OutboxRelay,
  publishInboxChanged,
  type Queryable,
  refusalTranslator,
} from "@svc/platform";
import {
  AccountConsoleService,
  AccountService,
  DeviceSchema,
  NoticeSchema,
  OwnAccountSchema,
  PasskeySummarySchema,
  AgeVerdict as ProtoAgeVerdict,
  LinkConflict as ProtoLinkConflict,
  NoticeKind as ProtoNoticeKind,
  SandboxBehavior as ProtoSandboxBehavior,
  SecuredAccountStatus as ProtoSecuredAccountStatus,
  PushSubscriptionSummarySchema,
  SecuredAccountSchema,
} from "@svc/proto/account/v1/account_pb.js";
import { CredentialKind, Environment } from "@svc/proto/common/v1/caller_pb.js";
import type { AgeVerdict } from "./age/age-evaluation.ts";
import { evaluateAge } from "./age/evaluate-age.ts";
import {
  describePresentation,
  findRequestPresentation,
  type PresentationContext,
  presentationRequestObject,
  startPresentation,
  submitPresentation,
} from "./age/wallet/presentations.ts";
import type { WalletDependencies } from "./age/wallet/wallet-setup.ts";
import type { AccountSecrets } from "./config.ts";
import { listDevices, registerDevice } from "./devices/devices.ts";
import { describeHuman, devSignInSubject, resolveSignedInHuman } from "./humans/humans.ts";
import { claimedEmailHash, findHumanByEmail } from "./humans/sign-in-emails.ts";
import type { AccountLink } from "./links/account-link.entity.ts";
import {
  accountLinkState,
  type DeletionContext,
  deleteHuman,
  type LinkConflict,
  listOwnAccounts,
  reportCredentialChange,
  secureAccount,
  unlinkAccount,
  unlinkOwnAccount,
} from "./links/account-links.ts";
import { dismissNotice, listNotices, type NoticeKind } from "./links/notices.ts";
import { listSecuredAccounts, type SecuredAccountRow } from "./links/secured-accounts.ts";
import { beginAssertion, finishAssertion } from "./passkeys/assertion.ts";
import { listPasskeys, removePasskey } from "./passkeys/passkey-list.ts";
import { beginRegistration, finishRegistration, type PasskeyContext } from "./passkeys/registration.ts";
import type { PushProviders } from "./push/configured-providers.ts";
import type { PushEndpointPolicy } from "./push/push-endpoint-policy.ts";
import { pushItem } from "./push/push-item.ts";
import { addPushSubscription, listPushSubscriptions, removePushSubscription } from "./push/push-subscriptions.ts";
import type { PushSealing } from "./push/subscription-sealing.ts";
import type { VapidKeys } from "./push/vapid-keys.ts";
import type { WebPushHandOver } from "./push/web-push-sender.ts";
import { type AccountRefusalKind, invalidArgument } from "./refusal.ts";
import {
  createSandboxHuman,
  type SandboxBehavior,
  type SandboxContext,
  sandboxAssert,
} from "./sandbox/sandbox-humans.ts";

export interface RouteDependencies {
  wallet: WalletDependencies;
  orm: MikroORM;
  /** Prepared statements on hot paths, outside the ORM (see `openStatementPool`). */
  statements: Queryable;
  clock: Clock;
  bus: Pick<EventBus, "subject" | "nc" | "subjectPrefix">;
  outbox: Pick<OutboxRelay, "publishCommitted">;
  secrets: AccountSecrets;
  devIssuer: string;
  rpName: string;
  /** The configured push providers by device platform; none in development and tests. */
  pushProviders: PushProviders;
  /**
   * Web Push: the sender, started with the background work (until then, pushes are written due for a
   * replica's sender to take), is handed a trigger's pushes or woken after each commit that wrote some.
   */
  webPush: { sealing: PushSealing; vapid: VapidKeys; policy: PushEndpointPolicy; sender: WebPushHandOver };
  logger: Logger;
}

/** Thin handlers: translate the wire to the domain operations and back, one unit of work (a fresh entity manager) each. */
export function accountRoutes(deps: RouteDependencies): (router: ConnectRouter) => void {
  const { clock } = deps;
  const em = () => deps.orm.em.fork();
  const pepper = createSecretKey(deps.secrets.refPepper);
  const emailPepper = createSecretKey(deps.secrets.emailPepper);
  const passkeys = (): PasskeyContext => ({ em: em(), clock });
  // A commit that changed the person's links or notices may also have written their web pushes.
  const inboxes = {
    changed: (svcUserIds: Iterable<string | null>) => {
      deps.webPush.sender.wake();
      return publishInboxChanged(deps.bus, svcUserIds);
    },
  };
  const links = (): DeletionContext => ({
    em: em(),
    clock,
    pepper,
    bus: deps.bus,
    outbox: deps.outbox,
    inboxes,
    logger: deps.logger,
  });
  const sandbox = (): SandboxContext => ({
    em: em(),
    clock,
    sandboxKey: deps.secrets.sandboxKey,
    devIssuer: deps.devIssuer,
  });

  const wallet = (): PresentationContext => ({ em: em(), clock, ...deps.wallet });

  return (router) => {
    router.service(AccountService, {
      startAgePresentation: (req) =>
        wireErrors(async () => {
          const begun = await startPresentation(wallet(), {
            svcUserId: req.svcUserId,
            requestId: req.requestId,
            threshold: req.threshold,
            clientId: req.clientId,
            at: instant(req.at) ?? clock.now(),
          });
          return begun.covered
            ? { covered: true }
            : {
                presentationId: begun.presentationId,
                requestUri: begun.requestUri,
                expiresAt: timestampFromDate(begun.expiresAt),
              };
        }),

      getAgePresentationRequestObject: (req) => wireErrors(() => presentationRequestObject(wallet(), req)),

      submitAgePresentation: (req) =>
        wireErrors(async () => {
          const outcome = await submitPresentation(wallet(), req);
          return outcome.accepted ? { accepted: true } : { accepted: false, reason: outcome.reason };
        }),

      getAgePresentation: (req) => wireErrors(() => describePresentation(wallet(), req)),

      resolveSignedInHuman: (req) =>
        wireErrors(() =>
          resolveSignedInHuman(em(), clock, {
            issuer: req.issuer,
            subject: req.subject,
            emailHash: claimedEmailHash(emailPepper, req),
          }),
        ),

      findHumanByEmail: (req) =>
        wireErrors(async () => ({ svcUserId: await findHumanByEmail(em(), emailPepper, req.email) })),

      getHuman: (req) =>
        wireErrors(async () => {
          const human = await describeHuman(deps.statements, req.svcUserId);
          return {
            svcUserId: human.svcUserId,
            passkeyCount: human.passkeyCount,
            deviceCount: human.deviceCount,
            webPushSubscriptions: human.webPushSubscriptions,
            sandboxBehavior:
              human.sandboxBehavior === null
                ? ProtoSandboxBehavior.UNSPECIFIED
                : toProtoBehavior[human.sandboxBehavior],
            sandboxEnvironment: human.sandboxEnvironment === null ? Environment.UNSPECIFIED : Environment.DEVELOPMENT,
            createdAt: timestampFromDate(human.createdAt),
          };
        }),

      beginPasskeyRegistration: (req) =>
        wireErrors(async () => {
          const begun = await beginRegistration({ ...passkeys(), rpName: deps.rpName }, req);
          return {
            ceremonyId: begun.ceremonyId,
            optionsJson: begun.optionsJson,
            expiresAt: timestampFromDate(begun.expiresAt),
          };
        }),

      finishPasskeyRegistration: (req) => wireErrors(() => finishRegistration(passkeys(), req)),

      beginPasskeyAssertion: (req) =>
        wireErrors(async () => {
          const begun = await beginAssertion(passkeys(), req);
          return {
            ceremonyId: begun.ceremonyId,
            optionsJson: begun.optionsJson,
            expiresAt: timestampFromDate(begun.expiresAt),
          };
        }),

      finishPasskeyAssertion: (req) => wireErrors(() => finishAssertion(passkeys(), req)),

      pushToHuman: (req) =>
        wireErrors(() =>
          pushItem(
            {
              em: em(),
              statements: deps.statements,
              now: clock.now(),
              providers: deps.pushProviders,
              sender: deps.webPush.sender,
              logger: deps.logger,
              traceContext: currentTraceContext(),
            },
            req,
          ),
        ),

      getPushKey: async () => ({ publicKey: deps.webPush.vapid.publicKey }),

      addPushSubscription: (req) =>
        wireErrors(async () => ({
          subscriptionId: await addPushSubscription(
            { em: em(), sealing: deps.webPush.sealing, policy: deps.webPush.policy, now: clock.now() },
            { svcUserId: req.svcUserId, endpoint: req.endpoint, p256dh: req.p256dh, auth: req.auth },
          ),
        })),

      listPushSubscriptions: (req) =>
        wireErrors(async () => ({
          subscriptions: (await listPushSubscriptions(em(), req.svcUserId)).map((row) =>
            create(PushSubscriptionSummarySchema, {
              subscriptionId: row.id,
              pushHost: row.push_host,
              createdAt: timestampFromDate(new Date(row.created_at)),
              lastPushedAt: row.last_pushed_at ? timestampFromDate(new Date(row.last_pushed_at)) : undefined,
            }),
          ),
        })),

      removePushSubscription: (req) =>
        wireErrors(async () => {
          await removePushSubscription(em(), { svcUserId: req.svcUserId, subscriptionId: req.subscriptionId });
          return {};
        }),

      registerDevice: (req) => wireErrors(async () => ({ deviceId: await registerDevice(em(), clock, req) })),

      listDevices: (req) =>
        wireErrors(async () => {
          const { devices, webPushSubscriptions } = await listDevices(deps.statements, req.svcUserId);
          return {
            devices: devices.map((device) =>
              create(DeviceSchema, {
                deviceId: device.id,
                platform: device.platform,
                registeredAt: timestampFromDate(device.registeredAt),
              }),
            ),
            webPushSubscriptions,
          };
        }),

      evaluateAge: (req) =>
        wireErrors(async () => {
          const result = await evaluateAge(em(), {
            svcUserId: req.svcUserId,
            threshold: req.threshold,
            at: instant(req.at),
            requestId: req.requestId,
          });
          return { verdict: toProtoVerdict[result.verdict], source: result.source };
        }),

      secureAccount: (req) =>
        wireErrors(async () => {
          const outcome = await secureAccount(links(), {
            organizationId: req.organizationId,
            environment: environmentName(req.environment),
            partnerUserRef: req.partnerUserRef,
            svcUserId: req.svcUserId,
            surfaceId: req.surfaceId,
            at: instant(req.at),
          });
          if (outcome.kind === "conflict") return { conflict: toProtoConflict[outcome.conflict] };
          return {
            handle: outcome.handle,
            firstTime: outcome.firstTime,
            trustedSince: timestampFromDate(outcome.trustedSince),
          };
        }),

      getAccountLink: (req) =>
        wireErrors(async () => {
          const state = await accountLinkState(links(), {
            organizationId: req.organizationId,
            environment: environmentName(req.environment),
            partnerUserRef: req.partnerUserRef,
            svcUserId: req.svcUserId,
          });
          return state.trusted
            ? { trusted: true, handle: state.handle, trustedSince: timestampFromDate(state.trustedSince) }
            : { trusted: false };
        }),

      listSecuredAccounts: (req) =>
        wireErrors(async () => {
          const page = await listSecuredAccounts(
            { em: em(), pepper },
            {
              organizationId: req.caller?.organizationId ?? "",
              environment: req.caller ? environmentName(req.caller.environment) : undefined,
              secretKey: req.caller?.credentialKind === CredentialKind.SECRET_KEY,
            },
            {
              partnerUserRef: req.partnerUserRef,
              status: statusFilter(req.status),
              limit: req.limit,
              offset: req.offset,
              cursor: req.cursor,
            },
          );
          return {
            rows: page.rows.map(toProtoSecuredAccount),
            total: page.total,
            limit: page.limit,
            nextCursor: page.nextCursor ?? "",
          };
        }),

      reportCredentialChange: (req) =>
        wireErrors(async () => {
          const ended = await reportCredentialChange(links(), {
            organizationId: req.caller?.organizationId ?? "",
            environment: req.caller ? environmentName(req.caller.environment) : undefined,
            secretKey: req.caller?.credentialKind === CredentialKind.SECRET_KEY,
            partnerUserRef: req.partnerUserRef,
          });
          return ended === undefined ? { unlinked: false } : { unlinked: true, handle: ended.handle };
        }),

      sandboxAssert: (req) => wireErrors(async () => ({ responseJson: await sandboxAssert(sandbox(), req) })),

      listOwnAccounts: (req) =>
        wireErrors(async () => ({ accounts: (await listOwnAccounts(em(), req.svcUserId)).map(toProtoOwnAccount) })),

      unlinkOwnAccount: (req) =>
        wireErrors(async () => {
          const outcome = await unlinkOwnAccount(links(), { svcUserId: req.svcUserId, handle: req.handle });
          return {
            handle: outcome.handle,
            unlinkedAt: timestampFromDate(outcome.unlinkedAt),
            alreadyUnlinked: outcome.alreadyUnlinked,
          };
        }),

      deleteHuman: (req) => wireErrors(() => deleteHuman(links(), req.svcUserId)),

      listNotices: (req) =>
        wireErrors(async () => ({
          notices: (await listNotices(em(), req.svcUserId)).map((notice) =>
            create(NoticeSchema, {
              noticeId: notice.id,
              kind: toProtoNoticeKind[notice.kind],
              organizationId: notice.organization_id,
              environment: environmentProto(notice.environment),
              handle: notice.handle,
              at: timestampFromDate(notice.at),
            }),
          ),
        })),

      dismissNotice: (req) =>
        wireErrors(async () => {
          await dismissNotice(em(), { svcUserId: req.svcUserId, noticeId: req.noticeId });
          inboxes.changed([req.svcUserId]);
          return {};
        }),

      listPasskeys: (req) =>
        wireErrors(async () => ({
          passkeys: (await listPasskeys(em(), req.svcUserId)).map((passkey) =>
            create(PasskeySummarySchema, {
              passkeyId: passkey.credentialId,
              createdAt: timestampFromDate(passkey.createdAt),
              ...(passkey.lastUsedAt != null && { lastUsedAt: timestampFromDate(passkey.lastUsedAt) }),
              transports: passkey.transports,
            }),
          ),
        })),

      removePasskey: (req) =>
        wireErrors(async () => {
          await removePasskey(em(), { svcUserId: req.svcUserId, passkeyId: req.passkeyId });
          return {};
        }),
    });

    router.service(AccountConsoleService, {
      issueDevAgeCredential: (req) =>
        wireErrors(async () => {
          if (req.issuer !== "development" && req.issuer !== "untrusted")
            throw invalidArgument(`issuer must be development or untrusted: ${req.issuer}`);
          let holderJwk: unknown;
          try {
            holderJwk = JSON.parse(req.holderJwk);
          } catch {
            throw invalidArgument("holder_jwk must be a JWK as JSON");
          }
          const format = req.format === "" ? "sd-jwt-vc" : req.format;
          if (format !== "sd-jwt-vc" && format !== "mdoc" && format !== "mdoc-av")
            throw invalidArgument(`format must be sd-jwt-vc, mdoc or mdoc-av: ${req.format}`);
          const credential = await deps.wallet.devIssuers.issue({
            birthDate: req.birthDate,
            holderJwk,
            issuer: req.issuer,
            format,
            revoked: req.revoked,
            now: clock.now(),
          });
          return { credential };
        }),

      findAgePresentation: (req) => wireErrors(() => findRequestPresentation(wallet(), req.requestId)),

      createSandboxHuman: (req) =>
        wireErrors(() =>
          createSandboxHuman(sandbox(), {
            environment: environmentName(req.environment),
            behavior: fromProtoBehavior.get(req.behavior),
            age: req.age,
          }),
        ),

      getDevSignInIdentity: (req) =>
        wireErrors(async () => ({
          issuer: deps.devIssuer,
          subject: await devSignInSubject(em(), req.svcUserId, deps.devIssuer),
        })),

      unlinkAccount: (req) =>
        wireErrors(async () => {
          if (req.credentialChanged)
            throw invalidArgument(
              "the console's revoke always ends a link with reason platform; the partner's server reports a changed sign-in detail (POST /v1/secured-accounts/report-credential-change)",
            );
          const unlinkedAt = clock.now();
          const { handle } = await unlinkAccount(links(), {
            organizationId: req.organizationId,
            environment: environmentName(req.environment),
            partnerUserRef: req.partnerUserRef,
            by: "platform",
            reason: "platform",
            at: unlinkedAt,
          });
          return { handle, unlinkedAt: timestampFromDate(unlinkedAt), reason: "platform" };
        }),
    });
  };
}

/** The one place where domain refusals become Connect codes. */
const wireErrors = refusalTranslator<AccountRefusalKind>({
  invalid_argument: Code.InvalidArgument,
  not_found: Code.NotFound,
  failed_precondition: Code.FailedPrecondition,
  permission_denied: Code.PermissionDenied,
  already_exists: Code.AlreadyExists,
  unauthenticated: Code.Unauthenticated,
});

const instant = (timestamp: Timestamp | undefined): Date | undefined =>
  timestamp === undefined ? undefined : timestampDate(timestamp);

const toProtoBehavior: Record<SandboxBehavior, ProtoSandboxBehavior> = {
  confirm: ProtoSandboxBehavior.CONFIRM,
  decline: ProtoSandboxBehavior.DECLINE,
  silent: ProtoSandboxBehavior.SILENT,
};

const fromProtoBehavior = new Map<ProtoSandboxBehavior, SandboxBehavior>(
  Object.entries(toProtoBehavior).map(([name, value]) => [value, name as SandboxBehavior]),
);

const toProtoVerdict: Record<AgeVerdict, ProtoAgeVerdict> = {
  over: ProtoAgeVerdict.OVER,
  under: ProtoAgeVerdict.UNDER,
  unavailable: ProtoAgeVerdict.UNAVAILABLE,
};

const toProtoConflict: Record<LinkConflict, ProtoLinkConflict> = {
  already_trusted: ProtoLinkConflict.ALREADY_TRUSTED,
  rebind_requires_prior_id: ProtoLinkConflict.REBIND_REQUIRES_PRIOR_ID,
};

const toProtoStatus: Record<SecuredAccountRow["status"], ProtoSecuredAccountStatus> = {
  active: ProtoSecuredAccountStatus.ACTIVE,
  unlinked: ProtoSecuredAccountStatus.UNLINKED,
};

const fromProtoStatus = new Map<ProtoSecuredAccountStatus, SecuredAccountRow["status"]>(
  Object.entries(toProtoStatus).map(([name, value]) => [value, name as SecuredAccountRow["status"]]),
);

/** Unspecified lists both states; a value this service does not know is refused, not read as "both". */
function statusFilter(status: ProtoSecuredAccountStatus): SecuredAccountRow["status"] | undefined {
  if (status === ProtoSecuredAccountStatus.UNSPECIFIED) return undefined;
  const name = fromProtoStatus.get(status);
  if (name === undefined) throw invalidArgument(`status ${status} is not a secured-account status`);
  return name;
}

const toProtoSecuredAccount = (row: SecuredAccountRow) =>
  create(SecuredAccountSchema, {
    handle: row.handle,
    status: toProtoStatus[row.status],
    securedAt: timestampFromDate(row.securedAt),
    ...(row.unlinkedAt !== null && { unlinkedAt: timestampFromDate(row.unlinkedAt) }),
    unlinkedBy: row.unlinkedBy ?? "",
    unlinkReason: row.unlinkReason ?? "",
    surfaceId: row.surfaceId ?? "",
  });

const toProtoOwnAccount = (link: AccountLink) =>
  create(OwnAccountSchema, {
    organizationId: link.organizationId,
    environment: environmentProto(link.environment),
    handle: link.handle,
    status: toProtoStatus[link.status],
    securedAt: timestampFromDate(link.securedAt),
    ...(link.unlinkedAt != null && { unlinkedAt: timestampFromDate(link.unlinkedAt) }),
    unlinkedBy: link.unlinkedBy ?? "",
    unlinkReason: link.unlinkReason ?? "",
  });

const toProtoNoticeKind: Record<NoticeKind, ProtoNoticeKind> = {
  account_revoked: ProtoNoticeKind.ACCOUNT_REVOKED,
  relink_offer: ProtoNoticeKind.RELINK_OFFER,
};
