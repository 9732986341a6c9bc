import { api } from "./api.ts";
import { button, el, type statusLine, uniqueId } from "./dom.ts";
import { guard } from "./guard.ts";
import { t } from "./i18n.ts";
import type { MessageKey } from "./messages.ts";

/** A presentation for a wallet to answer: ahead of time (`/app/age/prove`) or a request's step (`age_presentation`). */
export interface Presentation {
  presentation_id: string;
  qr_code_url: string;
}

/** The Digital Credentials API's request and answer, which the DOM types of this TypeScript do not know yet. */
interface DigitalRequestOptions {
  digital: { requests: { protocol: string; data: unknown }[] };
}
type DigitalCredentialAnswer = Credential & { data?: Record<string, unknown> };

/** A refusal code from the verifier, said plainly; anything else falls back to the general sentence. */
const refusals: Record<string, MessageKey> = {
  untrusted_issuer: "ageRefusedUntrustedIssuer",
  expired_credential: "ageRefusedExpired",
  credential_not_yet_valid: "ageRefusedNotYetValid",
  revoked_credential: "ageRefusedRevoked",
  claim_missing: "ageRefusedClaimMissing",
  claim_not_asked: "ageRefusedClaimNotAsked",
  credential_type_not_accepted: "ageRefusedType",
};
const refusalText = (code: string): string => `${t(refusals[code] ?? "ageRefusedUnverified")} ${t("ageNothingKept")}`;

/**
 * The wallet part of showing one's age, the "My age" screen's and a request's alike: a QR code for a
 * wallet on another device (its answer goes to the verifier by direct_post, so the step waits on
 * `/app/age/presentation`, backing off from 1 s to 8 s) and, where the browser has the Digital
 * Credentials API, a wallet on this device whose answer the step sends on. A refusal is shown in plain
 * words and stores nothing; the wallet may answer again. `ended` hears once when the presentation is
 * accepted or expired; the section is hidden then.
 */
export function walletStep(status: ReturnType<typeof statusLine>, ended: (state: "accepted" | "expired") => void) {
  const heading = uniqueId("wallet");
  const qr = el("img", { class: "qr", alt: t("ageQrAlt"), width: "240", height: "240" });
  const refusal = el("p", { role: "alert", class: "status problem", hidden: true });
  let step: Presentation | undefined;
  let waiting: ReturnType<typeof setTimeout> | undefined;
  let delay = 1000;
  /** The refusal the person dismissed: the wait does not show it again. */
  let dismissed = "";

  const showRefusal = (code: string) => {
    refusal.textContent = refusalText(code);
    refusal.hidden = false;
    retry.hidden = false;
  };
  const retry = button(t("ageTryAgain"), () => {
    refusal.hidden = true;
    retry.hidden = true;
    status.say(t("ageScanAgain"));
    delay = 1000;
  });
  retry.hidden = true;

  const stop = () => {
    clearTimeout(waiting);
    waiting = undefined;
    step = undefined;
  };
  const end = (state: "accepted" | "expired") => {
    stop();
    section.hidden = true;
    ended(state);
  };

  const wait = (current: Presentation) => {
    waiting = setTimeout(
      guard(status.say, async () => {
        const answer = await api<{ state: string; last_refusal?: string }>("POST", "/app/age/presentation", {
          presentation_id: current.presentation_id,
        }).finally(() => {
          // A failed look is tried again too: the wallet may still answer.
          if (step === current) {
            delay = Math.min(delay * 1.5, 8000);
            wait(current);
          }
        });
        if (step !== current) return;
        if (answer.state === "accepted" || answer.state === "expired") return end(answer.state);
        if (answer.last_refusal && answer.last_refusal !== dismissed) {
          dismissed = answer.last_refusal;
          showRefusal(answer.last_refusal);
        }
      }),
      delay,
    );
  };

  const sameDevice = button(
    t("ageSameDevice"),
    guard(status.say, async () => {
      const current = step;
      if (!current) return;
      const asked = await api<{ protocol: string; data: unknown }>("POST", "/app/age/dc-api-request", {
        presentation_id: current.presentation_id,
      });
      let credential: DigitalCredentialAnswer | null;
      try {
        const options: DigitalRequestOptions = {
          digital: { requests: [{ protocol: asked.protocol, data: asked.data }] },
        };
        credential = (await navigator.credentials.get(
          options as CredentialRequestOptions,
        )) as DigitalCredentialAnswer | null;
      } catch (error) {
        if (error instanceof DOMException && error.name === "NotAllowedError")
          return status.say(t("ageWalletDismissed"), "problem");
        throw error;
      }
      status.say(t("ageChecking"));
      const outcome = await api<{ accepted: boolean; reason?: string }>("POST", "/app/age/dc-api-response", {
        presentation_id: current.presentation_id,
        data: credential?.data ?? {},
      });
      if (step !== current) return;
      if (outcome.accepted) return end("accepted");
      dismissed = outcome.reason ?? "";
      showRefusal(dismissed);
      status.say("");
    }),
  );

  const section = el(
    "section",
    { "aria-labelledby": heading, hidden: true },
    el("h2", { id: heading }, t("ageWalletTitle")),
    el("p", {}, t("ageScan")),
    qr,
    sameDevice,
    refusal,
    retry,
  );

  return {
    element: section,
    /** Shows `presentation` (replacing any earlier one) and waits for the wallet. */
    begin(presentation: Presentation) {
      stop();
      step = presentation;
      dismissed = "";
      delay = 1000;
      qr.src = presentation.qr_code_url;
      sameDevice.hidden = !("DigitalCredential" in window);
      refusal.hidden = true;
      retry.hidden = true;
      section.hidden = false;
      status.say(t("ageWaiting"));
      wait(presentation);
    },
    /** Stops waiting (the person left the screen). */
    stop,
  };
}
