import { createAgents } from "./0001-agents.ts";
import { createBindings } from "./0002-bindings.ts";
import { createCards } from "./0003-cards.ts";
import { addResolutions } from "./0004-resolutions.ts";
import { addBindingNotices } from "./0005-binding-notices.ts";
import { cardRetention } from "./0006-card-retention.ts";
import { sandboxAnswers } from "./0007-sandbox-answers.ts";
import { quorum } from "./0008-quorum.ts";
import { personLabel } from "./0009-person-label.ts";
import { cardTraceContext } from "./0010-card-trace-context.ts";

/** Applied in order at start; a migration, once released, is never edited (add a new one). */
export const migrations = [
  createAgents,
  createBindings,
  createCards,
  addResolutions,
  addBindingNotices,
  cardRetention,
  sandboxAnswers,
  quorum,
  personLabel,
  cardTraceContext,
];
