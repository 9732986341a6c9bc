import { defineEntity, type InferEntity, p } from "@mikro-orm/postgresql";

/** A link code an agent started for a person to claim (bind-session). */
export const BindSession = defineEntity({
  name: "BindSession",
  tableName: "bind_session",
  properties: {
    linkCode: p.text().primary(),
    agentId: p.uuid(),
    createdAt: p.datetime(),
    expiresAt: p.datetime(),
    claimedAt: p.datetime().nullable(),
    /** The person who claimed it. */
    svcUserId: p.uuid().nullable(),
    /** The agent's name for the person (person-label.ts), given to the binding when the code is claimed. */
    personLabel: p.text().nullable(),
  },
});
export type BindSession = InferEntity<typeof BindSession>;

/** A person bound to an agent; ended by the person (unbind), kept for its history. */
export const Binding = defineEntity({
  name: "Binding",
  tableName: "binding",
  properties: {
    id: p.uuid().primary(),
    agentId: p.uuid(),
    svcUserId: p.uuid(),
    /**
     * A keyed hash of the person's pairwise id for this agent (see opaque-id.ts), so that an agent's
     * `opaque_id` finds its binding while the table never holds the id; binding again derives the same value.
     */
    opaqueIdLookup: p.text(),
    boundAt: p.datetime(),
    unboundAt: p.datetime().nullable(),
    /** When the person dismissed the inbox notice of this binding; until then the inbox shows it. */
    noticeDismissedAt: p.datetime().nullable(),
    /** The agent's name for the person, shown to them and to the other approvers of the agent's quorum cards. */
    personLabel: p.text().nullable(),
  },
});
export type Binding = InferEntity<typeof Binding>;
