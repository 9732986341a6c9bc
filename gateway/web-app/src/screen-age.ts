import { api } from "./api.ts";
import { button, el, statusLine } from "./dom.ts";
import { guard } from "./guard.ts";
import { t } from "./i18n.ts";
import type { Screen } from "./screen.ts";
import { type Presentation, walletStep } from "./wallet-step.ts";

/**
 * Proving one's age ahead of time with a wallet (`POST /app/age/prove`, the EU PID thresholds): the
 * wallet step shows the QR code and the same-device wallet, and says the outcome here.
 */
export const ageScreen: Screen = (main) => {
  const status = statusLine();
  const wallet = walletStep(status, (state) => {
    start.hidden = false;
    status.say(t(state === "accepted" ? "ageAccepted" : "ageExpired"));
  });

  const start = button(
    t("ageStart"),
    guard(status.say, async () => {
      wallet.begin(await api<Presentation>("POST", "/app/age/prove", {}));
      start.hidden = true;
    }),
    { class: "primary" },
  );

  main.append(
    el("h1", { tabindex: "-1" }, t("ageTitle")),
    el("p", {}, t("ageIntro")),
    start,
    wallet.element,
    status.element,
  );
  return wallet.stop;
};
