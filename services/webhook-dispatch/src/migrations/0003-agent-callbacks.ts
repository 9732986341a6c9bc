import { Migration } from "@svc/platform";

export class AddAgentCallbacks extends Migration {
  override up(): void {
    // An agent's callback is an endpoint owned by the agent (not by the organization's fan-out), so it goes
    // through the one engine: claims, leases, the retry schedule, the destination guard, signing.
    this.addSql(`alter table "endpoints" add column "agent_id" text null unique`);
    // Set for agents_ask resolutions: whose callback receives the message, and for which card.
    this.addSql(`alter table "messages" add column "agent_id" text null, add column "card_id" text null`);
    this.addSql(`create index "messages_by_card" on "messages" ("card_id") where "card_id" is not null`);
  }
}
