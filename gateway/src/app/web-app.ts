import { existsSync, readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { iconSizes, themeColour } from "../../web-app/icons.ts";
import { languages, pickLanguage } from "../../web-app/src/messages.ts";
import type { RawReply, RawRoute } from "../http/raw-route.ts";
import { escapeHtml, pageHeaders } from "./page-headers.ts";

/** The web app's sources (the stylesheet is served from there) and its scripts, compiled at install. */
const webAppFolder = new URL("../../web-app/", import.meta.url);
const compiledFolder = new URL("gen/", webAppFolder);

/** Where the identity provider sends the person back with the authorization code. */
const signedInPath = "/app/signed-in";

/** The screens the page draws itself; the server answers each with the same page. */
const screenPaths =
  /^\/app(?:\/(?:signed-in|inbox|passkeys|notifications|accounts|agents|age|delete|requests\/req_[0-9a-f]{32}))?\/?$/;
const assetPath = /^\/app\/assets\/([a-z0-9-]+\.(?:js|css|png))$/;

/** What makes `/app/` an installable app (Web App Manifest): Chromium's criteria and the home screen's icon. */
const webAppManifest = {
  id: "/app/",
  name: languages.en.appName,
  short_name: languages.en.appName,
  start_url: "/app/inbox",
  scope: "/app/",
  display: "standalone",
  theme_color: themeColour,
  background_color: "#ffffff",
  icons: iconSizes.flatMap((size) =>
    ["any", "maskable"].map((purpose) => ({
      src: `/app/assets/icon-${size}.png`,
      sizes: `${size}x${size}`,
      type: "image/png",
      purpose,
    })),
  ),
};

/** Whom the page signs in with: an OpenID Connect issuer (its discovery document tells the endpoints) and the client id there. */
export interface SignInSettings {
  issuer: string;
  clientId: string;
}

/**
 * The compiled scripts and the stylesheet, read once at start. A checkout where `npm ci` has not run
 * has none: the gateway refuses to start then rather than serve a page that cannot work.
 */
function loadAssets(): Map<string, RawReply> {
  const main = new URL("main.js", compiledFolder);
  if (!existsSync(main))
    throw new Error(
      `the web app is not built: ${fileURLToPath(main)} is missing. Run npm ci (its postinstall builds it) or npm run build:web-app`,
    );
  const assets = new Map<string, RawReply>();
  for (const file of readdirSync(compiledFolder))
    if (file.endsWith(".png"))
      assets.set(file, {
        status: 200,
        headers: pageHeaders("image/png"),
        body: readFileSync(new URL(file, compiledFolder)),
      });
    else if (file.endsWith(".js"))
      assets.set(file, {
        status: 200,
        headers: pageHeaders("text/javascript; charset=utf-8"),
        body: readFileSync(new URL(file, compiledFolder), "utf8"),
      });
  assets.set("style.css", {
    status: 200,
    headers: pageHeaders("text/css; charset=utf-8"),
    body: readFileSync(new URL("src/style.css", webAppFolder), "utf8"),
  });
  return assets;
}

/**
 * The person's web app at `{api_origin}/app`: one page for every screen (it reads its screen from the
 * path), its scripts and its stylesheet. The server picks the language from `Accept-Language` and tells
 * the page whom to sign in with; everything else the page does through the app API with the ID token
 * as its bearer. Without `signIn` the page says that signing in is not set up.
 */
export function webAppRoutes(options: { signIn: SignInSettings | undefined; publicOrigin: string }): RawRoute[] {
  const assets = loadAssets();
  const { signIn } = options;
  // The page fetches the issuer's discovery document and token endpoint itself.
  const issuerOrigin = signIn ? new URL(signIn.issuer).origin : undefined;
  const connectSrc = issuerOrigin && issuerOrigin !== new URL(options.publicOrigin).origin ? [issuerOrigin] : [];
  const redirectUri = `${options.publicOrigin}${signedInPath}`;
  const manifest: RawReply = {
    status: 200,
    headers: pageHeaders("application/manifest+json"),
    body: JSON.stringify(webAppManifest),
  };
  const notFound: RawReply = { status: 404, headers: pageHeaders("text/plain; charset=utf-8"), body: "no such file" };

  return [
    {
      path: screenPaths,
      method: "GET",
      serve: ({ headers }) => {
        const language = pickLanguage(headers["accept-language"]);
        const t = languages[language];
        const meta = signIn
          ? `<meta name="oidc-issuer" content="${escapeHtml(signIn.issuer)}">
<meta name="oidc-client-id" content="${escapeHtml(signIn.clientId)}">
<meta name="oidc-redirect-uri" content="${escapeHtml(redirectUri)}">`
          : "";
        return {
          status: 200,
          headers: { ...pageHeaders("text/html; charset=utf-8", { connectSrc }), vary: "accept-language" },
          body: `<!doctype html>
<html lang="${language}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(t.appName)}</title>
<meta name="theme-color" content="${themeColour}">
<link rel="manifest" href="/app/manifest.webmanifest">
<link rel="icon" href="/app/assets/icon-192.png">
<link rel="apple-touch-icon" href="/app/assets/icon-192.png">
${meta}
<link rel="stylesheet" href="/app/assets/style.css">
<script type="module" src="/app/assets/main.js"></script>
</head>
<body>
<a class="skip" href="#main">${escapeHtml(t.skipToContent)}</a>
<header id="top"><p class="brand">${escapeHtml(t.appName)}</p></header>
<main id="main" tabindex="-1"><p role="status">${escapeHtml(t.loading)}</p></main>
</body>
</html>
`,
        };
      },
    },
    {
      path: assetPath,
      method: "GET",
      serve: ({ url }) => assets.get(assetPath.exec(url.pathname)?.[1] ?? "") ?? notFound,
    },
    { path: "/app/manifest.webmanifest", method: "GET", serve: () => manifest },
    // At /app/, so its scope is the app's and no Service-Worker-Allowed header is needed.
    { path: "/app/service-worker.js", method: "GET", serve: () => assets.get("service-worker.js") ?? notFound },
  ];
}
