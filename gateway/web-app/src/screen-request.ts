import { api } from "./api.ts";
import { button, el, statusLine } from "./dom.ts";
import { guard } from "./guard.ts";
import { t } from "./i18n.ts";
import { assertPasskey, cannotVerifyUser } from "./passkey.ts";
import type { Screen } from "./screen.ts";
import { type Presentation, walletStep } from "./wallet-step.ts";

interface Opened {
  status: string;
  gate_type: "human" | "age";
  age_threshold?: number;
  ceremony_id?: string;
  options?: PublicKeyCredentialRequestOptionsJSON;
  /** An Age Gate's wallet step: needed while the person's evidence does not cover the threshold. */
  age_presentation?: { needed: false } | ({ needed: true } & Presentation);
}

/**
 * One gate request (`/app/requests/<request_id>`, the deep link's secret in the fragment when there is
 * one): what it asks, then confirm with a passkey or decline. An Age Gate the person's evidence does not
 * cover first shows the wallet step, and the passkey once the wallet's answer is accepted. Each confirm
 * opens the request again for a fresh ceremony, so a dismissed prompt can simply be tried again. Where
 * the browser says this device cannot verify the person, the request fails with device_lock_required.
 */
export const requestScreen: Screen = (main) => {
  const requestId = location.pathname.split("/")[3] ?? "";
  const secret = new URLSearchParams(location.hash.slice(1)).get("t") ?? undefined;
  const access = { request_id: requestId, ...(secret ? { t: secret } : {}) };
  const status = statusLine();
  const title = el("h1", { tabindex: "-1" }, t("loading"));
  const intro = el("p", {});
  const actions = el("div", { class: "actions", hidden: true });
  const open = () => api<Opened>("POST", "/app/requests/open", { ...access, origin: location.origin });

  const showStatus = (state: string) => {
    actions.hidden = true;
    wallet.stop();
    wallet.element.hidden = true;
    status.say(t("requestStatus", { status: state }));
  };

  /** What an opening asks next: the request's end, the wallet step, or the passkey. */
  const show = (opened: Opened): opened is Opened & Required<Pick<Opened, "ceremony_id" | "options">> => {
    if (opened.status !== "pending") {
      showStatus(opened.status);
      return false;
    }
    actions.hidden = false;
    const step = opened.age_presentation;
    confirm.hidden = step?.needed === true;
    if (step?.needed) {
      intro.textContent = t("requestIntroWallet");
      wallet.begin(step);
      return false;
    }
    intro.textContent = t("requestIntro");
    return opened.ceremony_id !== undefined && opened.options !== undefined;
  };

  // Accepted: the passkey is next. Expired while the request is pending: opening again starts a fresh step.
  const wallet = walletStep(status, (state) =>
    guard(status.say, async () => {
      if (show(await open()) && state === "accepted") status.say(t("requestAgeShown"));
    })(),
  );

  const confirm = button(
    t("requestConfirm"),
    guard(status.say, async () => {
      const opened = await open();
      if (!show(opened)) return;
      const response = await assertPasskey(opened.options).catch(async (refusal: unknown) => {
        if (await cannotVerifyUser(refusal)) return undefined;
        throw refusal;
      });
      if (response === undefined) {
        const failed = await api<{ status: string }>("POST", "/app/requests/fail", {
          ...access,
          reason: "device_lock_required",
        });
        showStatus(failed.status);
        if (failed.status === "failed") status.say(t("requestDeviceLock", { status: failed.status }), "problem");
        return;
      }
      const confirmed = await api<{ status: string }>("POST", "/app/requests/confirm", {
        ...access,
        ceremony_id: opened.ceremony_id,
        response,
      });
      showStatus(confirmed.status);
    }),
    { class: "primary" },
  );

  actions.append(
    confirm,
    button(
      t("requestDecline"),
      guard(status.say, async () => {
        const declined = await api<{ status: string }>("POST", "/app/requests/decline", access);
        showStatus(declined.status);
      }),
    ),
  );
  main.append(title, intro, wallet.element, actions, status.element);

  guard(status.say, async () => {
    const opened = await open();
    title.textContent =
      opened.gate_type === "age" ? t("requestTitleAge", { age: opened.age_threshold ?? "" }) : t("requestTitleHuman");
    show(opened);
  })();
  return wallet.stop;
};
