import { api } from "./api.ts";
import { button, el, statusLine } from "./dom.ts";
import { guard } from "./guard.ts";
import { t } from "./i18n.ts";
import { assertPasskey } from "./passkey.ts";
import type { Screen } from "./screen.ts";

interface Opened {
  status: string;
  gate_type: "human" | "age";
  age_threshold?: number;
  ceremony_id?: string;
  options?: PublicKeyCredentialRequestOptionsJSON;
}

/**
 * One gate request (`/app/requests/<request_id>`, the deep link's secret in the fragment when there is
 * one): what it asks, then confirm with a passkey or decline. Each confirm opens the request again for a
 * fresh ceremony, so a dismissed prompt can simply be tried again.
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
    status.say(t("requestStatus", { status: state }));
  };

  actions.append(
    button(
      t("requestConfirm"),
      guard(status.say, async () => {
        const opened = await open();
        if (opened.status !== "pending" || !opened.options || !opened.ceremony_id) return showStatus(opened.status);
        const response = await assertPasskey(opened.options);
        const confirmed = await api<{ status: string }>("POST", "/app/requests/confirm", {
          ...access,
          ceremony_id: opened.ceremony_id,
          response,
        });
        showStatus(confirmed.status);
      }),
      { class: "primary" },
    ),
    button(
      t("requestDecline"),
      guard(status.say, async () => {
        const declined = await api<{ status: string }>("POST", "/app/requests/decline", access);
        showStatus(declined.status);
      }),
    ),
  );
  main.append(title, intro, actions, status.element);

  guard(status.say, async () => {
    const opened = await open();
    title.textContent =
      opened.gate_type === "age" ? t("requestTitleAge", { age: opened.age_threshold ?? "" }) : t("requestTitleHuman");
    if (opened.status !== "pending") return showStatus(opened.status);
    intro.textContent = t("requestIntro");
    actions.hidden = false;
  })();
  return undefined;
};
