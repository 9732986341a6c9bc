/**
 * The app's service worker (scope `/app/`): what makes the app installable, its shell offline, and Web
 * Push. The shell (page, script, stylesheet, manifest, icons) is kept at install and answered when the
 * network is not there; the API (`/v1/`) is never cached or answered from a cache, so offline the app can
 * show itself but decides nothing. A push shows its title; a click opens the card or request it names.
 */
const sw = self as unknown as ServiceWorkerGlobalScope;

const shellCache = "app-shell-v1";
const shell = [
  "/app/",
  "/app/assets/main.js",
  "/app/assets/canonical-json.js",
  "/app/assets/style.css",
  "/app/manifest.webmanifest",
  "/app/assets/icon-192.png",
  "/app/assets/icon-512.png",
];

/** decisions.md "Web Push": the push payload. */
interface PushPayload {
  kind: "card" | "request" | "notice";
  id: string;
  title: string;
}

/** Where a notification's click goes: the request's own screen, the card in the inbox, the notices' screen. */
const pathFor = (push: PushPayload): string => {
  if (push.kind === "request" && /^req_[0-9a-f]{32}$/.test(push.id)) return `/app/requests/${push.id}`;
  if (push.kind === "card") return `/app/inbox#card-${encodeURIComponent(push.id)}`;
  return push.kind === "notice" ? "/app/accounts" : "/app/inbox";
};

sw.addEventListener("install", (event) => {
  event.waitUntil(
    caches
      .open(shellCache)
      .then((cache) => cache.addAll(shell))
      .then(() => sw.skipWaiting()),
  );
});

sw.addEventListener("activate", (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) => Promise.all(names.filter((name) => name !== shellCache).map((name) => caches.delete(name))))
      .then(() => sw.clients.claim()),
  );
});

sw.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  if (event.request.method !== "GET" || url.origin !== sw.location.origin || !url.pathname.startsWith("/app/")) return;
  // Network first, so a new version shows at once; the cache only when offline. Every screen is the one page.
  const cached = event.request.mode === "navigate" ? "/app/" : url.pathname;
  event.respondWith(fetch(event.request).catch(async () => (await caches.match(cached)) ?? Response.error()));
});

sw.addEventListener("push", (event) => {
  let push: PushPayload;
  try {
    push = event.data?.json() as PushPayload;
  } catch {
    return;
  }
  if (typeof push?.title !== "string" || typeof push.id !== "string") return;
  event.waitUntil(
    sw.registration.showNotification(push.title, {
      tag: `${push.kind}:${push.id}`,
      icon: "/app/assets/icon-192.png",
      data: { path: pathFor(push) },
    }),
  );
});

sw.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const path = (event.notification.data as { path?: string } | null)?.path ?? "/app/inbox";
  const target = new URL(path, sw.location.origin).href;
  event.waitUntil(
    sw.clients.matchAll({ type: "window", includeUncontrolled: true }).then(async (windows) => {
      const open = windows[0];
      if (open) return (await open.navigate(target))?.focus();
      return sw.clients.openWindow(target);
    }),
  );
});
