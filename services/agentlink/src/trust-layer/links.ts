import type { VisibleText } from "./card-structure.ts";
import type { Findings } from "./findings.ts";

/** `[text](target)` and `![alt](target)`, the forms Adaptive Cards' Markdown subset renders as links. */
const MARKDOWN_LINK = /!?\[([^\]\n]{0,500})\]\(\s*<?([^)\s>]{0,2000})>?(?:\s+"[^"\n]{0,200}")?\s*\)/g;
/** `[text][ref]` with `[ref]: target` elsewhere: the target is never where the text is. */
const REFERENCE_LINK = /^ {0,3}\[[^\]\n]{1,200}\]:\s*\S/m;
const URL = /\b(?:[a-z][a-z0-9+.-]{1,20}:\/\/|www\.|(?:mailto|tel|sms|data|javascript|file|intent):)[^\s<>"']+/iu;
/**
 * A host name with a top-level domain people recognise; e-mail addresses are left alone (an organiser's
 * address in a calendar invite is not where the action goes). File names (`server.ts`) are not domains.
 */
const DOMAIN =
  /(?<![@\p{L}\p{N}._-])(?:[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,61}[\p{L}\p{N}])?\.)+(?:com|net|org|info|biz|app|dev|io|ai|xyz|online|site|top|shop|store|bank|pay|money|finance|link|click|help|support|secure|login|page|live|cloud|tech|services|zip|mov|de|uk|fr|it|es|nl|be|ch|at|se|no|dk|fi|pl|cz|ru|ua|cn|jp|kr|in|br|ar|mx|ca|au|nz|za|eu|us|co|me|tv|cc|ly|gg|to|ws|su|ir|tk|ml|ga|cf|gq|pw)(?![\p{L}\p{N}-]|\.[\p{L}\p{N}]|@)/iu;

/** Links, URLs and domains written in a visible text. */
export function checkLinks(item: VisibleText, findings: Findings): void {
  const { text, path } = item;
  if (text.includes("](")) {
    for (const [, label = "", target = ""] of text.matchAll(MARKDOWN_LINK)) {
      if (sameAddress(label, target)) findings.add("markdown_link", path, text);
      else findings.add("link_hides_target", path, text);
    }
  }
  if (text.includes("]:") && REFERENCE_LINK.test(text)) findings.add("link_hides_target", path, text);
  if (!text.includes(".") && !text.includes(":")) return;
  if (URL.test(text)) findings.add("url_in_text", path, text);
  else if (DOMAIN.test(text)) findings.add("domain_in_text", path, text);
}

/** A link shows its target only when its text is that target, with or without `https://`, and the scheme is web. */
function sameAddress(label: string, target: string): boolean {
  if (!/^https?:\/\//i.test(target)) return false;
  const bare = (address: string) => address.trim().replace(/^https?:\/\//i, "").replace(/\/$/, "").toLowerCase();
  return bare(label) === bare(target);
}
