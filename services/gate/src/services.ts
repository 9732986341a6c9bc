import type { Client } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import type { Clock, EventBus, Logger, OutboxRelay } from "@svc/platform";
import type { AccountService } from "@svc/proto/account/v1/account_pb.js";
import type { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import type pg from "pg";
import type { PartnerCaller } from "./caller.ts";
import { Ceremony } from "./ceremony/ceremony.ts";
import { SandboxResponder } from "./ceremony/sandbox.ts";
import { GateFactsLookup } from "./gates/gate-facts.ts";
import { GateStore } from "./gates/gate-store.ts";
import { partnerRefs } from "./partner-refs.ts";
import { createLink, type LinkInput } from "./requests/create-link.ts";
import type { CreatedLink } from "./requests/created-link.ts";
import { IdempotentCreates } from "./requests/idempotent-creates.ts";
import { namedPerson } from "./requests/named-person.ts";
import { PartnerQueries } from "./requests/partner-queries.ts";
import { type PendingRequest, pendingRequestsOf } from "./requests/person-inbox.ts";
import { RequestLifecycle } from "./requests/request-lifecycle.ts";
import { publishRequestCreated, publishSupersededParent } from "./requests/request-watch.ts";
import { RequestWriter } from "./requests/request-writer.ts";
import { SessionFactsLookup } from "./sessions/session-facts.ts";
import { SessionStore } from "./sessions/session-store.ts";

export interface GateServices {
  gates: GateStore;
  sessions: SessionStore;
  queries: PartnerQueries;
  lifecycle: RequestLifecycle;
  ceremony: Ceremony;
  sandbox: SandboxResponder;
  createVerificationLink(caller: PartnerCaller, input: LinkInput): Promise<CreatedLink>;
  pendingRequestsOf(svcUserId: string): Promise<PendingRequest[]>;
}

export interface GateDependencies {
  orm: MikroORM;
  statements: pg.Pool;
  bus: EventBus;
  outbox: OutboxRelay;
  clock: Clock;
  logger: Logger;
  account: Client<typeof AccountService>;
  signing: Client<typeof SigningService>;
  refKey: Buffer;
  presenceWindowMs: number;
  passkeyOrigin: string;
  deployment: "development" | "production";
  /** Test only (GATE_TEST_CRASH_AFTER_CREATE, refused in production): die by SIGKILL between a create's commit and its answer. */
  crashAfterCreate?: boolean;
}

/** The gate service's domain objects, built once per process from its context. */
export function gateServices(deps: GateDependencies): GateServices {
  const { orm, clock, logger, account } = deps;
  const refs = partnerRefs(deps.refKey);
  const db = deps.statements;
  const sessionFacts = new SessionFactsLookup(db);
  const gateFacts = new GateFactsLookup(db);
  const writer = new RequestWriter(db);
  const idempotent = new IdempotentCreates({ db, refs, gates: gateFacts });
  const lifecycle = new RequestLifecycle({ orm, clock, bus: deps.bus, outbox: deps.outbox });
  const ceremony = new Ceremony({ lifecycle, account, signing: deps.signing, refs, clock, logger });
  const sandbox = new SandboxResponder({
    ceremony,
    account,
    rp: { rpId: new URL(deps.passkeyOrigin).hostname, origin: deps.passkeyOrigin },
    orm,
    clock,
    logger,
    deployment: deps.deployment,
  });

  return {
    gates: new GateStore({ orm, clock }),
    sessions: new SessionStore({ db, clock, refs, facts: sessionFacts }),
    queries: new PartnerQueries({ orm, clock, refs, bus: deps.bus }),
    lifecycle,
    ceremony,
    sandbox,
    async createVerificationLink(caller, input) {
      // The account call runs before the transaction, so it holds no lock while another service answers.
      const person =
        input.svcUserId === "" ? undefined : await namedPerson({ account, bus: deps.bus }, input.svcUserId);
      const devices = person?.devices ?? 0;
      const behavior = sandbox.behaviorOf(person?.human, caller.environment);
      const link = await createLink(
        {
          writer,
          sessions: sessionFacts,
          gates: gateFacts,
          clock,
          bus: deps.bus,
          refs,
          presenceWindowMs: deps.presenceWindowMs,
          idempotent,
        },
        caller,
        input,
        { devices, sandbox: behavior },
      );
      // The ambiguous outcome the Idempotency-Key exists for: committed, never answered (a real kill -9).
      if (deps.crashAfterCreate) process.kill(process.pid, "SIGKILL");
      if (input.svcUserId !== "") {
        // A new pending request, or a ceremony that superseded the person's pending pre-check: their inbox changed.
        publishRequestCreated(deps.bus, input.svcUserId, link, input.parentRequestId);
        // The push trigger committed with the request: the relay publishes it for account.
        if (link.pushEvent !== null) deps.outbox.publishCommitted([link.pushEvent]);
      }
      if (link.status === "pending" && input.parentRequestId !== "")
        await publishSupersededParent(deps.bus, db, input.parentRequestId);
      // Recorded with the request: should this answer be lost, the sandbox sweep gives it.
      if (link.status === "pending" && behavior !== undefined)
        void sandbox.answerSoon(link.requestId, input.svcUserId, behavior);
      return link;
    },
    pendingRequestsOf: (svcUserId) => pendingRequestsOf(orm, clock, svcUserId),
  };
}
