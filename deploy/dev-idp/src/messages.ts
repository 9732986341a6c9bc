/** The authorize page's strings, in the languages the web app speaks. */
const en = {
  title: "Development identity provider",
  notice:
    "This is the development identity provider, not a real sign-in: anyone can sign in as anyone here. In production the app signs in through the configured OpenID Connect provider.",
  subjectLabel: "Sign in as",
  subjectHelp:
    "Any identifier: a new one starts a new person, one used before (for example a sandbox human's subject) is that person again. An e-mail address is also the person's verified address.",
  continue: "Continue",
  invalid: "This sign-in request cannot be answered: {message}",
};

const de: typeof en = {
  title: "Entwicklungs-Identitätsanbieter",
  notice:
    "Dies ist der Identitätsanbieter für die Entwicklung, keine echte Anmeldung: Hier kann sich jeder als jeder anmelden. Im Betrieb meldet sich die App über den eingerichteten OpenID-Connect-Anbieter an.",
  subjectLabel: "Anmelden als",
  subjectHelp:
    "Eine beliebige Kennung: Eine neue beginnt eine neue Person, eine schon benutzte (etwa das Subject eines Sandbox-Menschen) ist wieder diese Person. Eine E-Mail-Adresse ist zugleich die bestätigte Adresse der Person.",
  continue: "Weiter",
  invalid: "Diese Anmeldeanfrage kann nicht beantwortet werden: {message}",
};

export const languages = { en, de } as const;
type Language = keyof typeof languages;

/** The first language of `Accept-Language` (by q, then order) that the page speaks; English otherwise. */
export function pickLanguage(acceptLanguage: string | undefined): Language {
  const ranked = (acceptLanguage ?? "")
    .split(",")
    .map((part, index) => {
      const [tag = "", ...params] = part.trim().split(";");
      const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
      return { base: tag.trim().toLowerCase().split("-")[0] ?? "", q: q ? Number(q.slice(2)) : 1, index };
    })
    .filter((entry) => entry.base !== "" && Number.isFinite(entry.q) && entry.q > 0)
    .sort((a, b) => b.q - a.q || a.index - b.index);
  for (const { base } of ranked) if (base === "en" || base === "de") return base;
  return "en";
}
