import { button, el } from "./dom.ts";
import { whenSignedOut } from "./guard.ts";
import { t } from "./i18n.ts";
import type { MessageKey } from "./messages.ts";
import { passkeysSupported } from "./passkey.ts";
import type { Screen } from "./screen.ts";
import { accountsScreen } from "./screen-accounts.ts";
import { ageScreen } from "./screen-age.ts";
import { agentsScreen } from "./screen-agents.ts";
import { deleteScreen } from "./screen-delete.ts";
import { inboxScreen } from "./screen-inbox.ts";
import { notificationsScreen } from "./screen-notifications.ts";
import { passkeysScreen } from "./screen-passkeys.ts";
import { requestScreen } from "./screen-request.ts";
import { signInScreen } from "./screen-sign-in.ts";
import { finishSignIn, sessionToken, signOut } from "./session.ts";

/** The screens in the main navigation, by path. */
const navigation: { path: string; label: MessageKey; screen: Screen }[] = [
  { path: "/app/inbox", label: "navInbox", screen: inboxScreen },
  { path: "/app/passkeys", label: "navPasskeys", screen: passkeysScreen },
  { path: "/app/notifications", label: "navNotifications", screen: notificationsScreen },
  { path: "/app/accounts", label: "navAccounts", screen: accountsScreen },
  { path: "/app/agents", label: "navAgents", screen: agentsScreen },
  { path: "/app/age", label: "navAge", screen: ageScreen },
  { path: "/app/delete", label: "navDelete", screen: deleteScreen },
];

const main = document.getElementById("main") as HTMLElement;
const header = document.getElementById("top") as HTMLElement;
let leave: (() => void) | undefined;

function screenFor(path: string): { screen: Screen; current: string | undefined } {
  if (/^\/app\/requests\/req_[0-9a-f]{32}$/.test(path)) return { screen: requestScreen, current: "/app/inbox" };
  const found = navigation.find((entry) => entry.path === path.replace(/\/$/, "")) ?? navigation[0];
  if (!found) throw new Error("the navigation is empty");
  return { screen: found.screen, current: found.path };
}

const navigate = (path: string): void => {
  history.pushState(null, "", path);
  show(true);
};

function drawHeader(current: string | undefined, signedIn: boolean): void {
  header.replaceChildren(el("p", { class: "brand" }, t("appName")));
  if (!signedIn) return;
  const links = navigation.map(({ path, label }) => {
    const link = el("a", { href: path, "aria-current": path === current ? "page" : undefined }, t(label));
    link.addEventListener("click", (event) => {
      if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
      event.preventDefault();
      navigate(path);
    });
    return el("li", {}, link);
  });
  header.append(
    el("nav", { "aria-label": t("mainNavigation") }, el("ul", {}, ...links)),
    button(t("signOut"), () => {
      signOut();
      show(true);
    }),
  );
}

/** Draws the screen of the current path; `moved` puts the focus on its heading, as a new page would. */
function show(moved: boolean, notice?: string): void {
  leave?.();
  leave = undefined;
  main.replaceChildren();
  const { screen, current } = screenFor(location.pathname);
  if (!sessionToken()) {
    drawHeader(undefined, false);
    signInScreen(main, notice);
  } else {
    drawHeader(current, true);
    if (!passkeysSupported()) main.append(el("p", { class: "status problem" }, t("noPasskeySupport")));
    leave = screen(main, navigate);
  }
  if (moved) main.querySelector<HTMLElement>("h1")?.focus();
}

whenSignedOut(() => show(true, t("sessionEnded")));
window.addEventListener("popstate", () => show(true));

if (location.pathname === "/app/signed-in") {
  main.replaceChildren(el("p", { role: "status" }, t("signingIn")));
  finishSignIn().then(
    (returnTo) => {
      history.replaceState(null, "", returnTo.startsWith("/app") ? returnTo : "/app/inbox");
      show(true);
    },
    (error: unknown) => {
      history.replaceState(null, "", "/app");
      show(true, t("signInFailed", { message: error instanceof Error ? error.message : String(error) }));
    },
  );
} else show(false);

// Makes the app installable and receives pushes; every screen works without it, so a refusal changes nothing.
if ("serviceWorker" in navigator)
  void navigator.serviceWorker.register("/app/service-worker.js", { scope: "/app/" }).catch(() => undefined);
