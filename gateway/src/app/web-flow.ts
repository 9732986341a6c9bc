import type { RawReply, RawRoute } from "../http/raw-route.ts";

/**
 * The web flow at `web_url` (`/flow/<request_id>`) and its script, served outside `{base_url}`. The page is static: it reads the request id
 * from its path and the flow secret from the URL fragment, and talks to the `/v1/flow/…` operations.
 * It asks for nothing personal.
 */
export const webFlowRoutes: RawRoute[] = [
  { path: /^\/flow\/req_[0-9a-f]{32}$/, method: "GET", serve: () => page("text/html; charset=utf-8", pageHtml) },
  { path: "/flow/flow.js", method: "GET", serve: () => page("text/javascript; charset=utf-8", pageScript) },
];

function page(contentType: string, body: string): RawReply {
  return {
    status: 200,
    headers: {
      "content-type": contentType,
      "cache-control": "no-store",
      "content-security-policy":
        "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'",
      "referrer-policy": "no-referrer",
      "x-content-type-options": "nosniff",
    },
    body,
  };
}

const pageHtml = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Verify you are a person</title>
<style>
  body { font-family: system-ui, sans-serif; max-width: 28rem; margin: 4rem auto; padding: 0 1rem; color: #1b1b1f; }
  h1 { font-size: 1.4rem; }
  button { display: block; width: 100%; margin: .6rem 0; padding: .8rem; font-size: 1rem; border-radius: .5rem; border: 1px solid #888; background: #fff; cursor: pointer; }
  button.primary { background: #1b1b1f; color: #fff; border-color: #1b1b1f; }
  #status { min-height: 1.5rem; color: #555; }
  [hidden] { display: none !important; }
</style>
</head>
<body>
<h1 id="title">Verify you are a person</h1>
<p id="detail">Loading…</p>
<div id="actions" hidden>
  <button id="confirm" class="primary">Continue with a passkey</button>
  <button id="register" hidden>Create a passkey</button>
  <button id="decline">Cancel</button>
</div>
<p id="status" role="status"></p>
<script src="/flow/flow.js"></script>
</body>
</html>
`;

const pageScript = `"use strict";
(() => {
  const requestId = location.pathname.split("/")[2];
  const secret = new URLSearchParams(location.hash.slice(1)).get("t") || "";
  const $ = (id) => document.getElementById(id);
  const say = (text) => { $("status").textContent = text; };

  async function call(path, body) {
    const response = await fetch("/v1/flow/" + path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ request_id: requestId, t: secret, ...body }),
    });
    const answer = await response.json();
    if (!response.ok || !answer.data || answer.data.error) throw new Error((answer.data && answer.data.error && answer.data.error.message) || answer.message || "the request failed");
    return answer.data.data;
  }

  function finish(result) {
    $("actions").hidden = true;
    if (result.return_url) {
      const back = new URL(result.return_url);
      back.searchParams.set("request_id", requestId);
      if (result.token) back.searchParams.set("token", result.token);
      back.searchParams.set("status", result.status);
      location.assign(back.toString());
      return;
    }
    say(result.status === "completed" ? "Done. You can close this page." : "This request is " + result.status + ".");
  }

  async function open() {
    const opened = await call("requests/open", { origin: location.origin });
    $("title").textContent = opened.gate_type === "age" ? "Confirm you are " + opened.age_threshold + " or older" : "Verify you are a person";
    if (opened.status !== "pending") {
      $("detail").textContent = "This request is " + opened.status + ".";
      return undefined;
    }
    $("detail").textContent = "Confirm with a passkey on this device. Nothing about you is shared.";
    $("actions").hidden = false;
    $("register").hidden = opened.auth_mode !== "private";
    return opened;
  }

  async function confirm() {
    say("Waiting for your passkey…");
    const opened = await open();
    if (!opened) return;
    const credential = await navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(opened.options) });
    finish(await call("requests/confirm", { ceremony_id: opened.ceremony_id, response: credential.toJSON() }));
  }

  async function register() {
    say("Creating a passkey…");
    const begun = await call("passkeys/begin-registration", { origin: location.origin });
    const credential = await navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(begun.options) });
    await fetch("/v1/flow/passkeys/finish-registration", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ceremony_id: begun.ceremony_id, response: credential.toJSON() }),
    }).then((r) => r.json()).then((a) => { if (a.data && a.data.error) throw new Error(a.data.error.message); });
    say("Passkey created. Continue with it.");
  }

  const guard = (work) => () => work().catch((error) => {
    // A dismissed prompt may be tried again; the request stays pending until it expires.
    say(error && error.name === "NotAllowedError" ? "The passkey prompt was dismissed. Try again." : (error && error.message) || String(error));
  });

  $("confirm").addEventListener("click", guard(confirm));
  $("register").addEventListener("click", guard(register));
  $("decline").addEventListener("click", guard(async () => finish(await call("requests/decline", {}))));

  if (!window.PublicKeyCredential || !PublicKeyCredential.parseRequestOptionsFromJSON) {
    call("requests/fail", { reason: "platform_declined" }).then(finish, (e) => say(e.message));
  } else {
    open().catch((e) => say(e.message));
  }
})();
`;
