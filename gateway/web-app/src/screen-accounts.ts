import { api } from "./api.ts";
import { button, el, statusLine } from "./dom.ts";
import { guard } from "./guard.ts";
import { t, when } from "./i18n.ts";
import type { Screen } from "./screen.ts";

interface SecuredAccount {
  handle: string;
  platform: { name: string };
  status: "active" | "unlinked";
  secured_at: string;
  unlinked_at: string | null;
}

/** The person's secured accounts: the platform, since when, and Unlink (asked twice: it tells the platform). */
export const accountsScreen: Screen = (main) => {
  const status = statusLine();
  const listed = el("ul", { class: "items" });

  const load = async () => {
    const { accounts } = await api<{ accounts: SecuredAccount[] }>("GET", "/app/secured-accounts");
    listed.replaceChildren(
      ...(accounts.length === 0 ? [el("li", {}, t("accountsNone"))] : accounts.map((account) => item(account))),
    );
  };

  const item = (account: SecuredAccount) => {
    const platform = account.platform.name;
    const row = el(
      "li",
      {},
      el("h2", { class: "item-title" }, platform),
      el(
        "p",
        { class: "hint" },
        account.status === "active"
          ? t("accountSince", { date: when(account.secured_at) })
          : t("accountUnlinkedAt", { date: when(account.unlinked_at ?? account.secured_at) }),
      ),
    );
    if (account.status !== "active") return row;
    const ask = el(
      "div",
      { class: "confirm-step", hidden: true, role: "group", "aria-label": t("accountUnlinkLabel", { platform }) },
      el("p", {}, t("accountUnlinkReally", { platform })),
      button(
        t("accountUnlinkYes"),
        guard(status.say, async () => {
          await api("POST", "/app/secured-accounts/unlink", { handle: account.handle });
          status.say(t("accountUnlinked", { platform }));
          await load();
        }),
        { class: "danger" },
      ),
      button(t("keep"), () => {
        ask.hidden = true;
        unlink.hidden = false;
        unlink.focus();
      }),
    );
    const unlink = button(
      t("accountUnlink"),
      () => {
        ask.hidden = false;
        unlink.hidden = true;
        ask.querySelector("button")?.focus();
      },
      { "aria-label": t("accountUnlinkLabel", { platform }) },
    );
    row.append(unlink, ask);
    return row;
  };

  main.append(
    el("h1", { tabindex: "-1" }, t("accountsTitle")),
    el("p", {}, t("accountsIntro")),
    status.element,
    listed,
  );
  guard(status.say, load)();
  return undefined;
};
