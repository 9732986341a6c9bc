import { api } from "./api.ts";
import { button, el, statusLine } from "./dom.ts";
import { guard } from "./guard.ts";
import { t, when } from "./i18n.ts";
import { createPasskey } from "./passkey.ts";
import type { Screen } from "./screen.ts";

interface Passkey {
  passkey_id: string;
  created_at: string;
  last_used_at: string | null;
}

/** The person's passkeys: create one (WebAuthn registration), list them, remove one. */
export const passkeysScreen: Screen = (main) => {
  const status = statusLine();
  // The list says its own problems, so a created passkey's message stays when the list cannot load.
  const listStatus = statusLine();
  const listed = el("ul", { class: "items" });

  const load = async () => {
    const { passkeys } = await api<{ passkeys: Passkey[] }>("GET", "/app/passkeys");
    listed.replaceChildren(
      ...(passkeys.length === 0
        ? [el("li", {}, t("passkeysNone"))]
        : passkeys.map((passkey) => {
            const created = when(passkey.created_at);
            return el(
              "li",
              {},
              el("p", {}, t("passkeyItem", { created })),
              el(
                "p",
                { class: "hint" },
                passkey.last_used_at
                  ? t("passkeyLastUsed", { date: when(passkey.last_used_at) })
                  : t("passkeyNeverUsed"),
              ),
              button(
                t("passkeyRemove"),
                guard(status.say, async () => {
                  await api("POST", "/app/passkeys/remove", { passkey_id: passkey.passkey_id });
                  status.say(t("passkeyRemoved"));
                  await load();
                }),
                { "aria-label": t("passkeyRemoveLabel", { created }) },
              ),
            );
          })),
    );
  };

  const create = guard(status.say, async () => {
    const begun = await api<{ ceremony_id: string; options: PublicKeyCredentialCreationOptionsJSON }>(
      "POST",
      "/app/passkeys/begin-registration",
      { origin: location.origin },
    );
    const response = await createPasskey(begun.options);
    await api("POST", "/app/passkeys/finish-registration", { ceremony_id: begun.ceremony_id, response });
    status.say(t("passkeyCreated"));
    guard(listStatus.say, load)();
  });

  main.append(
    el("h1", { tabindex: "-1" }, t("passkeysTitle")),
    el("p", {}, t("passkeysIntro")),
    button(t("passkeyCreate"), create, { class: "primary" }),
    status.element,
    listStatus.element,
    listed,
  );
  guard(listStatus.say, load)();
  return undefined;
};
