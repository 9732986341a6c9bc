import { api } from "./api.ts";
import { el, statusLine, uniqueId } from "./dom.ts";
import { guard } from "./guard.ts";
import { t } from "./i18n.ts";
import type { Screen } from "./screen.ts";
import { signOut } from "./session.ts";

/** The phrase the API requires, in English whatever the page's language: it is what the person types. */
const phrase = "delete my account";

/** Deleting the account, behind a confirmation step: the person types the phrase, then presses the button. */
export const deleteScreen: Screen = (main) => {
  const status = statusLine();
  const inputId = uniqueId("confirm-phrase");
  const input = el("input", { id: inputId, name: "confirm", autocomplete: "off", required: true });
  const form = el(
    "form",
    { class: "stacked" },
    el("label", { for: inputId }, t("deleteConfirmLabel")),
    input,
    el("button", { type: "submit", class: "danger" }, t("deleteButton")),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    guard(status.say, async () => {
      if (input.value.trim() !== phrase) return status.say(t("deleteMismatch"), "problem");
      await api("POST", "/app/account/delete", { confirm: phrase });
      signOut();
      form.hidden = true;
      status.say(t("deleteDone"));
    })();
  });
  main.append(el("h1", { tabindex: "-1" }, t("deleteTitle")), el("p", {}, t("deleteIntro")), form, status.element);
  return undefined;
};
