import { Migration } from "@svc/platform";

/**
 * The agent's name for the person it links (bind-session's `person_label`): kept with the code until it is
 * claimed, then with the binding, where a claim of a later code with a label replaces it.
 */
class PersonLabel extends Migration {
  override up(): void {
    this.addSql(`alter table "bind_session" add column "person_label" text null`);
    this.addSql(`alter table "binding" add column "person_label" text null`);
  }
}

export const personLabel = { name: "0009_person_label", class: PersonLabel };
