import { api } from "./api.ts";
import { button, el, statusLine } from "./dom.ts";
import { guard } from "./guard.ts";
import { t, when } from "./i18n.ts";
import type { Screen } from "./screen.ts";

interface PushSubscriptionRow {
  id: string;
  push_host: string;
  created_at: string;
}

const supported = () => "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;

/**
 * Web Push on this device: permission is asked only when the person presses the button (a prompt on
 * arrival is what browsers and people learn to refuse), then the browser subscribes with the server's
 * VAPID key and the subscription is registered. Lists the devices that receive pushes; removes one.
 */
export const notificationsScreen: Screen = (main) => {
  const status = statusLine();
  const listStatus = statusLine();
  const listed = el("ul", { class: "items" });

  const load = async () => {
    const { subscriptions } = await api<{ subscriptions: PushSubscriptionRow[] }>("GET", "/app/push-subscriptions");
    listed.replaceChildren(
      ...(subscriptions.length === 0
        ? [el("li", {}, t("notificationsNone"))]
        : subscriptions.map((subscription) => {
            const created = when(subscription.created_at);
            return el(
              "li",
              {},
              el("p", {}, t("notificationsDevice", { host: subscription.push_host, created })),
              button(
                t("notificationsRemove"),
                guard(status.say, async () => {
                  await api("DELETE", `/app/push-subscriptions/${encodeURIComponent(subscription.id)}`);
                  status.say(t("notificationsRemoved"));
                  await load();
                }),
                { "aria-label": t("notificationsRemoveLabel", { host: subscription.push_host, created }) },
              ),
            );
          })),
    );
  };

  const turnOn = guard(status.say, async () => {
    if ((await Notification.requestPermission()) !== "granted") return status.say(t("notificationsBlocked"), "problem");
    const { public_key } = await api<{ public_key: string }>("GET", "/app/push-key");
    const registration = await navigator.serviceWorker.ready;
    const subscription = await registration.pushManager.subscribe({
      userVisibleOnly: true,
      applicationServerKey: public_key,
    });
    const { endpoint, keys } = subscription.toJSON();
    await api("POST", "/app/push-subscriptions", { endpoint, keys });
    status.say(t("notificationsOn"));
    await load();
  });

  main.append(el("h1", { tabindex: "-1" }, t("notificationsTitle")), el("p", {}, t("notificationsIntro")));
  if (!supported()) main.append(el("p", { class: "status problem" }, t("notificationsUnsupported")));
  else main.append(button(t("notificationsTurnOn"), turnOn, { class: "primary" }), status.element);
  main.append(el("h2", {}, t("notificationsDevices")), listStatus.element, listed);
  guard(listStatus.say, load)();
  return undefined;
};
