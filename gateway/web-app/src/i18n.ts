import { format, type Language, languages, type MessageKey } from "./messages.ts";

/** The language the server chose (it set `<html lang>` from Accept-Language). */
const language: Language = document.documentElement.lang === "de" ? "de" : "en";
const table = languages[language];

/** A message of the page's language, its placeholders filled. */
export const t = (key: MessageKey, values?: Record<string, string | number>): string => format(table[key], values);

const dateFormat = new Intl.DateTimeFormat(language, { dateStyle: "medium", timeStyle: "short" });

/** An RFC 3339 instant as the person reads dates. */
export const when = (instant: string): string => dateFormat.format(new Date(instant));
