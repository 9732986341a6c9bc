import type { RawReply, RawRoute } from "../http/raw-route.ts";

/**
 * The web flow at `web_url` (`/flow/<request_id>`) and its script, served outside `{base_url}`. The page is static: it reads the request id
 * from its path and the flow secret from the URL fragment, and talks to the `/v1/flow/…` operations.
 * It asks for nothing personal. For an Age Gate without evidence it first shows the wallet presentation
 * step (a QR code for a wallet on another device, the Digital Credentials API where the browser has it)
 * and waits for its outcome before the passkey confirmation. Where the browser says this device cannot
 * verify the person, the request fails with device_lock_required; without WebAuthn, platform_declined.
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
        "default-src 'none'; script-src 'self'; img-src 'self'; style-src 'unsafe-inline'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'",
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
  #qr { display: block; width: 15rem; height: 15rem; margin: 1rem auto; image-rendering: pixelated; }
  #refusal { color: #a4161a; }
  #status { min-height: 1.5rem; color: #555; }
  [hidden] { display: none !important; }
</style>
</head>
<body>
<h1 id="title">Verify you are a person</h1>
<p id="detail">Loading…</p>
<div id="wallet" hidden>
  <p>Scan with your wallet app to show your age. The wallet shares only whether you are old enough, never your birth date.</p>
  <img id="qr" alt="QR code to scan with your wallet app">
  <button id="same-device" hidden>Use a wallet on this device</button>
  <p id="refusal" role="alert" hidden></p>
  <button id="retry" hidden>Try again</button>
</div>
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
    if (opened.age_presentation && opened.age_presentation.needed) {
      showPresentation(opened.age_presentation);
      return undefined;
    }
    $("detail").textContent = "Confirm with a passkey on this device. Nothing about you is shared.";
    $("actions").hidden = false;
    $("register").hidden = opened.auth_mode !== "private";
    return opened;
  }

  // A refusal code from the verifier, said plainly; anything else falls back to the general sentence.
  const refusals = {
    untrusted_issuer: "Your wallet's credential comes from an issuer this service does not trust.",
    expired_credential: "The credential in your wallet has expired.",
    credential_not_yet_valid: "The credential in your wallet is not valid yet.",
    revoked_credential: "The credential in your wallet has been revoked by its issuer.",
    claim_missing: "Your wallet did not share the age this page asks for.",
    claim_not_asked: "Your wallet shared an age this page did not ask for.",
    credential_type_not_accepted: "This kind of credential cannot prove your age here.",
  };
  const refusalText = (code) => (refusals[code] || "Your wallet's answer could not be verified.") + " Nothing was kept.";

  let waiting;
  let dismissed = "";
  let delay = 1000;

  function showPresentation(step) {
    $("actions").hidden = true;
    $("wallet").hidden = false;
    $("detail").textContent = "First, show your age with a wallet. Then confirm with a passkey.";
    $("qr").src = step.qr_code_url;
    $("same-device").hidden = !("DigitalCredential" in window);
    $("same-device").onclick = guard(() => sameDevice(step));
    clearTimeout(waiting);
    delay = 1000;
    waiting = setTimeout(() => poll(step), delay);
  }

  // Waits for the wallet's direct_post (often from another device), backing off up to 8 s.
  async function poll(step) {
    let answer;
    try {
      answer = await call("requests/presentation", { presentation_id: step.presentation_id });
    } catch (error) {
      say(error.message);
    }
    if (answer && answer.status !== "pending") {
      $("wallet").hidden = true;
      $("detail").textContent = "This request is " + answer.status + ".";
      return;
    }
    if (answer && answer.state === "accepted") {
      $("wallet").hidden = true;
      say("Your age is shown. Now confirm with a passkey.");
      await open().catch((e) => say(e.message));
      return;
    }
    if (answer && answer.state === "expired") {
      await open().catch((e) => say(e.message));
      return;
    }
    // The request stays pending after a refusal: the wallet may answer again while the refusal shows.
    if (answer && answer.last_refusal && answer.last_refusal !== dismissed) {
      $("refusal").textContent = refusalText(answer.last_refusal);
      $("refusal").hidden = false;
      $("retry").hidden = false;
      $("retry").onclick = () => {
        dismissed = answer.last_refusal;
        $("refusal").hidden = true;
        $("retry").hidden = true;
        say("Scan the code again with your wallet app.");
        delay = 1000;
      };
    }
    delay = Math.min(delay * 1.5, 8000);
    waiting = setTimeout(() => poll(step), delay);
  }

  // The same-device wallet through the Digital Credentials API (OpenID4VP 1.0 Appendix A): a signed
  // request for this origin; the wallet answers to this page, which sends the answer to the verifier.
  async function sameDevice(step) {
    const asked = await call("requests/presentation/dc-api-request", { presentation_id: step.presentation_id });
    const credential = await navigator.credentials.get({ digital: { requests: [{ protocol: asked.protocol, data: asked.data }] } });
    say("Checking your wallet's answer…");
    const outcome = await call("requests/presentation/dc-api-response", {
      presentation_id: step.presentation_id,
      data: (credential && credential.data) || {},
    });
    if (outcome.accepted) {
      clearTimeout(waiting);
      $("wallet").hidden = true;
      say("Your age is shown. Now confirm with a passkey.");
      await open();
      return;
    }
    $("refusal").textContent = refusalText(outcome.reason);
    $("refusal").hidden = false;
    dismissed = outcome.reason;
    say("");
  }

  // The browser's word that this device cannot verify the person: the prompt, which asks for user
  // verification, was refused and there is no user-verifying platform authenticator. Elsewhere a refusal
  // is a dismissed prompt that may be tried again.
  async function cannotVerifyUser(error) {
    if (!error || error.name !== "NotAllowedError") return false;
    return !(await PublicKeyCredential.isUserVerifyingPlatformAuthenticatorAvailable().catch(() => true));
  }

  async function confirm() {
    say("Waiting for your passkey…");
    const opened = await open();
    if (!opened) return;
    let credential;
    try {
      credential = await navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(opened.options) });
    } catch (error) {
      if (!(await cannotVerifyUser(error))) throw error;
      const failed = await call("requests/fail", { reason: "device_lock_required" });
      if (failed.status === "failed") $("detail").textContent = "This device has no screen lock or biometric set up, so a passkey cannot confirm it is you.";
      finish(failed);
      return;
    }
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
