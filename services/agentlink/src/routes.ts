import { createSecretKey } from "node:crypto";
import { create, fromJson, type JsonObject } from "@bufbuild/protobuf";
import { StructSchema, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import {
  type Clock,
  type EnvironmentName,
  type EventBus,
  environmentName,
  environmentProto,
  isUuid,
  type Logger,
  type OutboxRelay,
  refusalTranslator,
} from "@svc/platform";
import type { AccountService } from "@svc/proto/account/v1/account_pb.js";
import {
  AgentCallbackService,
  AgentConsoleService,
  AgentSchema,
  AgentService,
  AgentStatus,
  BindingNoticeSchema,
  BindingSchema,
  BindingStatus,
  CardAuditEntrySchema,
  PersonCardSchema,
  AgentKeyRefusal as ProtoAgentKeyRefusal,
} from "@svc/proto/agentlink/v1/agentlink_pb.js";
import { type Caller, CallerSchema, CredentialKind, Environment } from "@svc/proto/common/v1/caller_pb.js";
import type { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import type { Agent } from "./agents/agent.entity.ts";
import type { AgentNames } from "./agents/agent-naming.ts";
import { type AgentContext, listAgents, registerAgent, revokeAgent, rotateAgentKey } from "./agents/agents.ts";
import { agentsOf } from "./agents/agents-of.ts";
import { type AgentKeyRefusal, authenticateAgentKey } from "./agents/authenticate.ts";
import { callbackTarget } from "./agents/callback-target.ts";
import { dismissBindingNotice, listBindingNotices } from "./binding/binding-notices.ts";
import type { BindingContext, BindSessionStatus } from "./binding/bindings.ts";
import { checkBinding, claimLinkCode, eraseHuman, listBindings, startBindSession, unbind } from "./binding/bindings.ts";
import type { AgentlinkSecrets } from "./config.ts";
import { beginConfirmation } from "./confirmations/begin-confirmation.ts";
import { type ConfirmationContext, confirm } from "./confirmations/confirm.ts";
import { queuedCardsOf, quorumsOf } from "./confirmations/person-cards.ts";
import type { SandboxAnswers } from "./confirmations/sandbox-answers.ts";
import { cancel } from "./proposals/cancel.ts";
import { cardAudit } from "./proposals/card-audit.ts";
import { type CardReader, noCardMessage } from "./proposals/card-reader.ts";
import { cardStateAt, checkStatusAnswer, toProtoCardStatus } from "./proposals/card-status.ts";
import type { CardWriter, ProposedCard } from "./proposals/card-writer.ts";
import { expireSweep } from "./proposals/expire-sweep.ts";
import { inquire, type ProposalContext } from "./proposals/inquire.ts";
import { proposeSandboxCard } from "./proposals/sandbox-proposal.ts";
import { AgentlinkRefusal, type AgentlinkRefusalKind, refuse } from "./refusal.ts";
import type { ClassifierClient } from "./trust-layer/classifier-client.ts";

export interface RouteDependencies {
  orm: MikroORM;
  /** The agents' naming facts for inquire, remembered per process. */
  agentNames: AgentNames;
  /** inquire's statement (propose-cards.sql), one per process so that concurrent calls share batches. */
  cards: CardWriter;
  cardReader: CardReader;
  clock: Clock;
  secrets: AgentlinkSecrets;
  keyOverlapMs: number;
  deployment: "development" | "production";
  account: Pick<
    Client<typeof AccountService>,
    "getHuman" | "findHumanByEmail" | "beginPasskeyAssertion" | "finishPasskeyAssertion" | "sandboxAssert"
  >;
  signing: Pick<Client<typeof SigningService>, "signProof">;
  /** Sandbox humans' answers: the fast path after inquire, and the sweep the background runs. */
  sandbox: SandboxAnswers;
  logger: Logger;
  /** The trust layer's HTTP classifier, made once at start; undefined without a URL (local rules only). */
  classifier: ClassifierClient | undefined;
  bus: Pick<EventBus, "subject" | "nc" | "js" | "subjectPrefix">;
  outbox: Pick<OutboxRelay, "publishCommitted">;
}

/** Thin handlers: translate the wire to the domain operations and back, one unit of work (a fresh entity manager) each. */
export function agentlinkRoutes(deps: RouteDependencies): (router: ConnectRouter) => void {
  const { clock } = deps;
  const em = () => deps.orm.em.fork();
  const keyPepper = createSecretKey(deps.secrets.keyPepper);
  const opaqueIdKey = createSecretKey(deps.secrets.opaqueIdKey);
  const agents = (): AgentContext => ({
    em: em(),
    clock,
    keyPepper,
    callbackSecretKey: deps.secrets.callbackSecretKey,
    keyOverlapMs: deps.keyOverlapMs,
    bus: deps.bus,
    outbox: deps.outbox,
    logger: deps.logger,
  });
  const bindings = (): BindingContext => ({ em: em(), clock, opaqueIdKey, bus: deps.bus });
  const proposals = (): ProposalContext => ({
    agents: deps.agentNames,
    cards: deps.cards,
    clock,
    opaqueIdKey,
    account: deps.account,
    classifier: deps.classifier,
    bus: deps.bus,
    outbox: deps.outbox,
    deployment: deps.deployment,
  });

  const confirmations = (): ConfirmationContext => ({
    em: em(),
    clock,
    opaqueIdKey,
    account: deps.account,
    signing: deps.signing,
    deployment: deps.deployment,
    bus: deps.bus,
    outbox: deps.outbox,
  });
  /** The person's queued cards as the app shows them. */
  const personCards = async (person: string) => {
    const manager = em();
    const now = clock.now();
    const cards = await queuedCardsOf(manager, person, now);
    const agents = await agentsOf(manager, cards);
    const quorums = await quorumsOf(manager, person, cards);
    return cards.map((card) =>
      create(PersonCardSchema, {
        cardId: card.id,
        requestId: card.requestId,
        agent: toProtoAgent(agents.find((agent) => agent.id === card.agentId) as Agent),
        card: JSON.parse(card.canonicalCard) as JsonObject,
        cardDigest: card.cardDigest,
        ttlAt: timestampFromDate(card.ttlAt),
        proposedAt: timestampFromDate(card.createdAt),
        warnings: card.warnings,
        status: toProtoCardStatus[cardStateAt(card, now).status],
        quorum: quorums.get(card.id),
      }),
    );
  };
  /** The person's notices of agents bound to them. */
  const bindingNotices = async (person: string) =>
    (await listBindingNotices(bindings(), person)).map((n) =>
      create(BindingNoticeSchema, {
        noticeId: n.noticeId,
        agent: toProtoAgent(n.agent),
        boundAt: timestampFromDate(n.boundAt),
      }),
    );
  /** After a new card's commit: sandbox humans' answers (its push triggers committed with it). */
  const cardQueued = (environment: EnvironmentName | undefined, card: ProposedCard) => {
    // Recorded with a development card: should these answers be lost, the sandbox sweep gives them.
    void deps.sandbox.answerSoon(environment, card.id);
  };

  return (router) => {
    router.service(AgentService, {
      authenticateAgentKey: async (req) => {
        const environments = req.environments.flatMap((e) => environmentName(e) ?? []);
        const outcome = await authenticateAgentKey({ em: em(), clock, keyPepper }, req.agentKey, environments);
        if (outcome.kind === "refused") return { refusal: toProtoRefusal[outcome.refusal] };
        return {
          caller: callerOf(outcome.agent),
          agent: toProtoAgent(outcome.agent),
          ...(outcome.keyExpiresAt && { keyExpiresAt: timestampFromDate(outcome.keyExpiresAt) }),
        };
      },

      startBindSession: (req) =>
        wireErrors(async () => {
          const session = await startBindSession(bindings(), agentIdOf(req.caller), req.personLabel);
          return { linkCode: session.linkCode, expiresAt: timestampFromDate(session.expiresAt) };
        }),

      checkBinding: (req) =>
        wireErrors(async () => {
          const state = await checkBinding(bindings(), agentIdOf(req.caller), req.linkCode);
          return {
            status: toProtoBindingStatus[state.status],
            ...(state.opaqueId !== null && { opaqueId: state.opaqueId }),
            ...(state.boundAt !== null && { boundAt: timestampFromDate(state.boundAt) }),
            ...(state.personLabel !== null && { personLabel: state.personLabel }),
          };
        }),

      claimLinkCode: (req) =>
        wireErrors(async () => {
          const claimed = await claimLinkCode(bindings(), requireHuman(req.svcUserId), req.linkCode);
          return {
            agent: toProtoAgent(claimed.agent),
            boundAt: timestampFromDate(claimed.boundAt),
            ...(claimed.personLabel !== null && { personLabel: claimed.personLabel }),
          };
        }),

      listBindings: (req) =>
        wireErrors(async () => ({
          bindings: (await listBindings(bindings(), requireHuman(req.svcUserId))).map((b) =>
            create(BindingSchema, {
              agent: toProtoAgent(b.agent),
              boundAt: timestampFromDate(b.boundAt),
              ...(b.personLabel !== null && { personLabel: b.personLabel }),
            }),
          ),
        })),

      unbind: (req) =>
        wireErrors(async () => {
          const unboundAt = await unbind(bindings(), requireHuman(req.svcUserId), req.agentId);
          return { agentId: req.agentId, unboundAt: timestampFromDate(unboundAt) };
        }),

      eraseHuman: (req) =>
        wireErrors(async () => ({ bindingsErased: await eraseHuman(bindings(), requireHuman(req.svcUserId)) })),

      inquire: (req) =>
        wireErrors(async () => {
          const { card, replay, asked } = await inquire(proposals(), agentIdOf(req.caller), {
            requestId: req.requestId,
            opaqueId: req.opaqueId,
            svcUserId: req.svcUserId,
            userEmail: req.userEmail,
            approvers: req.approvers,
            quorum: req.quorum && { approve: req.quorum.approve, deny: req.quorum.deny },
            ttlSeconds: req.ttlSeconds,
            proposal: req.proposal ?? {},
          });
          if (asked) cardQueued(environmentName(req.caller?.environment ?? Environment.UNSPECIFIED), card);
          return {
            status: toProtoCardStatus[card.status],
            cardId: card.id,
            ttlAt: timestampFromDate(card.ttlAt),
            idempotentReplay: replay,
          };
        }),

      checkStatus: (req) =>
        wireErrors(async () => {
          const card = await deps.cardReader.agentCard(agentIdOf(req.caller), req.requestId);
          return checkStatusAnswer(card, cardStateAt(card, clock.now()));
        }),

      checkStatuses: (req) =>
        wireErrors(async () => {
          const now = clock.now();
          const reads = req.reads.map((read) => ({ agentId: agentIdOf(read.caller), requestId: read.requestId }));
          const cards = await deps.cardReader.agentCards(reads);
          return {
            results: cards.map((card) =>
              card
                ? { outcome: { case: "answer" as const, value: checkStatusAnswer(card, cardStateAt(card, now)) } }
                : { outcome: { case: "notFound" as const, value: noCardMessage } },
            ),
          };
        }),

      cancel: (req) =>
        wireErrors(async () => {
          const outcome = await cancel(
            { em: em(), clock, bus: deps.bus },
            agentIdOf(req.caller),
            req.requestId,
            req.reason,
          );
          const { card } = outcome;
          return {
            status: toProtoCardStatus[outcome.status],
            cardId: card.id,
            ...(card.status === "cancelled" && card.resolvedAt && { cancelledAt: timestampFromDate(card.resolvedAt) }),
            alreadyResolved: outcome.alreadyResolved,
          };
        }),

      listCards: (req) => wireErrors(async () => ({ cards: await personCards(requireHuman(req.svcUserId)) })),

      listBindingNotices: (req) =>
        wireErrors(async () => ({ notices: await bindingNotices(requireHuman(req.svcUserId)) })),

      listInbox: (req) =>
        wireErrors(async () => {
          const person = requireHuman(req.svcUserId);
          const [cards, notices] = await Promise.all([personCards(person), bindingNotices(person)]);
          return { cards, notices };
        }),

      dismissBindingNotice: (req) =>
        wireErrors(async () => ({
          dismissedAt: timestampFromDate(
            await dismissBindingNotice(bindings(), requireHuman(req.svcUserId), req.noticeId),
          ),
        })),

      beginConfirmation: (req) =>
        wireErrors(async () => {
          const begun = await beginConfirmation(
            { em: em(), clock, account: deps.account },
            { svcUserId: requireHuman(req.svcUserId), decisions: req.decisions, rpId: req.rpId, origin: req.origin },
          );
          return { ...begun, expiresAt: timestampFromDate(begun.expiresAt) };
        }),

      confirm: (req) =>
        wireErrors(async () => {
          const confirmed = await confirm(confirmations(), {
            svcUserId: requireHuman(req.svcUserId),
            decisions: req.decisions,
            ceremonyId: req.ceremonyId,
            assertion: req.passkeyAssertion && {
              challengeId: req.passkeyAssertion.challengeId,
              responseJson: req.passkeyAssertion.responseJson,
            },
          });
          return { ...confirmed, signedAt: timestampFromDate(confirmed.signedAt) };
        }),
    });

    router.service(AgentCallbackService, {
      getCallbackTarget: async (req) => {
        const target = await callbackTarget(em(), deps.secrets.callbackSecretKey, req.agentId);
        return target ? { target } : {};
      },
    });

    router.service(AgentConsoleService, {
      registerAgent: (req) =>
        wireErrors(async () => {
          const registered = await registerAgent(agents(), {
            organizationId: req.organizationId,
            environment: environmentName(req.environment),
            name: req.name,
            displayName: req.displayName,
            avatarAsset: req.avatarAsset,
            categories: req.categories,
            callbackUrl: req.callbackUrl,
          });
          return {
            agent: toProtoAgent(registered.agent),
            agentKey: registered.agentKey,
            ...(registered.callbackSecret !== undefined && { callbackSecret: registered.callbackSecret }),
          };
        }),

      listAgents: (req) =>
        wireErrors(async () => ({ agents: (await listAgents(em(), req.organizationId)).map(toProtoAgent) })),

      revokeAgent: (req) => wireErrors(async () => ({ agent: toProtoAgent(await revokeAgent(agents(), req.agentId)) })),

      rotateAgentKey: (req) =>
        wireErrors(async () => {
          const rotated = await rotateAgentKey(agents(), req.agentId);
          return {
            agentId: rotated.agent.id,
            agentKey: rotated.agentKey,
            previousKeysExpireAt: timestampFromDate(rotated.previousKeysExpireAt),
          };
        }),

      sandboxClaimLinkCode: (req) =>
        wireErrors(async () => {
          if (deps.deployment === "production")
            throw refuse("failed_precondition", "sandbox humans do not exist in production");
          const human = await deps.account.getHuman({ svcUserId: requireHuman(req.svcUserId) });
          if (human.sandboxEnvironment !== Environment.DEVELOPMENT)
            throw refuse("failed_precondition", `human ${req.svcUserId} is not a sandbox human`);
          const claimed = await claimLinkCode(bindings(), req.svcUserId, req.linkCode, { sandbox: true });
          return { agent: toProtoAgent(claimed.agent), boundAt: timestampFromDate(claimed.boundAt) };
        }),

      expire: (req) =>
        wireErrors(async () => ({
          expiredCount: await expireSweep({ em: em(), clock, bus: deps.bus, outbox: deps.outbox }, req.limit),
        })),

      proposeSandboxCard: (req) =>
        wireErrors(async () => {
          const { agentId, requestId, card } = await proposeSandboxCard(
            { ...proposals(), em: em() },
            {
              agentName: req.agentName,
              organizationId: req.organizationId,
              svcUserId: req.svcUserId,
              ttlSeconds: req.ttlSeconds,
              proposal: req.proposal ?? {},
            },
          );
          cardQueued("development", card);
          return {
            status: toProtoCardStatus[card.status],
            cardId: card.id,
            requestId,
            agentId,
            ttlAt: timestampFromDate(card.ttlAt),
          };
        }),

      getCardAudit: (req) =>
        wireErrors(async () => {
          const { card, entries } = await cardAudit(em(), req.cardId);
          return {
            cardId: card.id,
            agentId: card.agentId,
            requestId: card.requestId,
            status: toProtoCardStatus[cardStateAt(card, clock.now()).status],
            entries: entries.map((entry) =>
              create(CardAuditEntrySchema, {
                action: entry.action,
                actor: entry.actor,
                at: timestampFromDate(entry.at),
                ...(entry.detail && { detail: entry.detail as JsonObject }),
              }),
            ),
          };
        }),
    });
  };
}

const connectCodes: Record<AgentlinkRefusalKind, Code> = {
  invalid_argument: Code.InvalidArgument,
  not_found: Code.NotFound,
  already_exists: Code.AlreadyExists,
  failed_precondition: Code.FailedPrecondition,
  expired: Code.FailedPrecondition,
  permission_denied: Code.PermissionDenied,
  unavailable: Code.Unavailable,
};
const translate = refusalTranslator<AgentlinkRefusalKind>(connectCodes);

/** The one place where domain refusals become Connect codes, their `data.error` fields a Struct detail. */
const wireErrors = <T>(work: () => Promise<T>): Promise<T> =>
  translate(async () => {
    try {
      return await work();
    } catch (error) {
      if (error instanceof AgentlinkRefusal && error.detail !== undefined)
        throw new ConnectError(error.message, connectCodes[error.kind], undefined, [
          { desc: StructSchema, value: fromJson(StructSchema, error.detail) },
        ]);
      throw error;
    }
  });

/** Agent operations come from the gateway with the agent key's caller: its credential id is the agent. */
function agentIdOf(caller: Caller | undefined): string {
  if (caller?.credentialKind !== CredentialKind.AGENT_KEY || caller.credentialId === "")
    throw refuse("permission_denied", "this operation takes an agent-key caller");
  return caller.credentialId;
}

function requireHuman(svcUserId: string): string {
  if (!isUuid(svcUserId)) throw refuse("invalid_argument", "svc_user_id must be a uuid");
  return svcUserId;
}

const callerOf = (agent: Agent): Caller =>
  create(CallerSchema, {
    organizationId: agent.organizationId,
    environment: environmentProto(agent.environment),
    credentialId: agent.id,
    credentialKind: CredentialKind.AGENT_KEY,
  });

function toProtoAgent(agent: Agent) {
  return create(AgentSchema, {
    agentId: agent.id,
    organizationId: agent.organizationId,
    environment: environmentProto(agent.environment),
    name: agent.name,
    displayName: agent.displayName,
    ...(agent.avatarAsset && { avatarAsset: agent.avatarAsset }),
    categories: agent.categories,
    ...(agent.callbackUrl && { callbackUrl: agent.callbackUrl }),
    status: agent.status === "active" ? AgentStatus.ACTIVE : AgentStatus.REVOKED,
    createdAt: timestampFromDate(agent.createdAt),
    ...(agent.revokedAt && { revokedAt: timestampFromDate(agent.revokedAt) }),
  });
}

const toProtoRefusal: Record<AgentKeyRefusal, ProtoAgentKeyRefusal> = {
  wrong_key_form: ProtoAgentKeyRefusal.WRONG_KEY_FORM,
  unknown_agent_name: ProtoAgentKeyRefusal.UNKNOWN_AGENT_NAME,
  other_environment: ProtoAgentKeyRefusal.OTHER_ENVIRONMENT,
  revoked_agent: ProtoAgentKeyRefusal.REVOKED_AGENT,
  wrong_secret: ProtoAgentKeyRefusal.WRONG_SECRET,
};

const toProtoBindingStatus: Record<BindSessionStatus, BindingStatus> = {
  pending: BindingStatus.PENDING,
  claimed: BindingStatus.CLAIMED,
  expired: BindingStatus.EXPIRED,
};
