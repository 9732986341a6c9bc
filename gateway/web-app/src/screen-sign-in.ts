import { button, el, statusLine } from "./dom.ts";
import { guard } from "./guard.ts";
import { t } from "./i18n.ts";
import { beginSignIn, signInSettings } from "./session.ts";

/** Signing in: one button to the identity provider, which comes back to where the person was going. */
export function signInScreen(main: HTMLElement, notice?: string): void {
  const status = statusLine();
  if (notice) status.say(notice, "problem");
  main.append(el("h1", { tabindex: "-1" }, t("signInTitle")), el("p", {}, t("signInIntro")), status.element);
  if (!signInSettings()) {
    status.say(t("signInUnavailable"), "problem");
    return;
  }
  main.append(
    button(
      t("signInButton"),
      guard(status.say, () => beginSignIn(location.pathname + location.hash)),
      { class: "primary" },
    ),
  );
}
