import { createSecretKey } from "node:crypto";
import { type Client, createClient, createRouterTransport, type ServiceImpl } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import {
  type Clock,
  connectEventBus,
  createLogger,
  type EventBus,
  OutboxEvent,
  openDatabase,
  outboxMigrations,
} from "@svc/platform";
import { AccountService } from "@svc/proto/account/v1/account_pb.js";
import { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import { Agent, AgentKey } from "../../src/agents/agent.entity.ts";
import { Binding, BindSession } from "../../src/binding/binding.entity.ts";
import type { ConfirmationContext } from "../../src/confirmations/confirm.ts";
import { migrations } from "../../src/migrations/index.ts";
import { Card, CardApprover, CardAudit } from "../../src/proposals/card.entity.ts";
import { opaqueIdKey, startTestAgentlink, type TestAgentlink } from "./agentlink.ts";

export interface InProcessConfirmations {
  agentlink: TestAgentlink;
  orm: MikroORM;
  account: Client<typeof AccountService>;
  /** What confirm and the sandbox answers run with, as the service builds it for `deployment`. */
  context(deployment?: "development" | "production"): ConfirmationContext;
  stop(): Promise<void>;
}

/**
 * The agentlink service on its own database, with confirm's context for running it in the test's process: its
 * own ORM and event bus, and the account and signing services answering in process with the test's handlers
 * (their contracts only). Nothing listens at the service's account URL and its sandbox sweep runs at start only,
 * before any card, so only what the test runs here answers a card.
 */
export async function startInProcessConfirmations(
  label: string,
  options: {
    clock: Clock;
    account: Partial<ServiceImpl<typeof AccountService>>;
    signing: Partial<ServiceImpl<typeof SigningService>>;
  },
): Promise<InProcessConfirmations> {
  const account = createClient(
    AccountService,
    createRouterTransport(({ service }) => service(AccountService, options.account)),
  );
  const signing = createClient(
    SigningService,
    createRouterTransport(({ service }) => service(SigningService, options.signing)),
  );
  const agentlink = await startTestAgentlink(label, {
    clock: options.clock,
    env: { AGENTLINK_ACCOUNT_URL: "http://127.0.0.1:1", AGENTLINK_SANDBOX_SWEEP_EVERY: "1h" },
  });
  const orm = await openDatabase({
    url: agentlink.database.url,
    schema: "agentlink",
    entities: [Agent, AgentKey, BindSession, Binding, Card, CardAudit, CardApprover, OutboxEvent],
    migrations: [...outboxMigrations, ...migrations],
    logger: createLogger("test", {}, "error"),
  });
  const bus: EventBus = await connectEventBus({
    url: agentlink.env.SVC_NATS_URL as string,
    name: `${label}-test`,
    stream: agentlink.env.SVC_EVENT_STREAM as string,
    subjectPrefix: agentlink.env.SVC_EVENT_SUBJECT_PREFIX as string,
  });
  return {
    agentlink,
    orm,
    account,
    context: (deployment = "production") => ({
      em: orm.em.fork(),
      clock: options.clock,
      opaqueIdKey: createSecretKey(opaqueIdKey),
      account,
      signing,
      deployment,
      bus,
      outbox: { publishCommitted: async () => true },
    }),
    stop: async () => {
      await bus.nc.drain();
      await orm.close();
      await agentlink.stop();
    },
  };
}
