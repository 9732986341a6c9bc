/** The element's attributes (decisions.md, "The widget"), and the one warning for any other. */
const knownAttributes = [
  "sitekey",
  "gate",
  "scope",
  "partner-user-id",
  "partner-user-ref",
  "svc-user-id",
  "notarize",
  "enroll",
  "link-on-verify",
  "return-url",
  "lang",
  "theme",
] as const;

/** Old attributes that still work, with what to write instead. */
const retired: Record<string, string> = {
  enroll: 'the old name of "notarize"; use notarize',
  "link-on-verify": "accepted and has no effect since 3.0; remove it",
};

/** Attributes every HTML element may carry: never a mistake on this one. */
const globalAttribute = /^(id|class|style|title|hidden|tabindex|slot|part|dir|role|inert|nonce|data-.*|aria-.*)$/;

const warned = new Set<string>();

/** Logs one console warning for each unknown or retired attribute, once per page. */
export function warnAboutAttributes(element: Element): void {
  for (const { name } of Array.from(element.attributes)) {
    if (warned.has(name) || globalAttribute.test(name)) continue;
    const known = (knownAttributes as readonly string[]).includes(name);
    if (known && !retired[name]) continue;
    warned.add(name);
    console.warn(
      known
        ? `<svc-verify>: attribute "${name}" is ${retired[name]}.`
        : `<svc-verify>: unknown attribute "${name}" is ignored.`,
    );
  }
}
