import { limits } from "./limits.ts";
import type { Violation } from "./violation.ts";

type Entry = Pick<Violation, "source" | "severity" | "explanation" | "fix">;

const schema = (explanation: string, fix: string): Entry => ({ source: "schema", severity: "error", explanation, fix });
const content = (severity: Violation["severity"], explanation: string, fix: string): Entry => ({
  source: "content",
  severity,
  explanation,
  fix,
});

/**
 * Every violation `type` the layer reports, with its source, severity and the sentences a developer reads.
 * The README's table is this table; a test keeps them in step.
 */
export const violationTypes = {
  body_invalid: schema(
    "The inquire body is not a JSON object with an `action` object.",
    "Send the body the inquire operation documents.",
  ),
  field_missing: schema(
    "A required field of the proposal is missing.",
    "Send `summary_title` and `category` in `action`.",
  ),
  field_invalid: schema(
    "A proposal field has the wrong type, length or format.",
    "Follow the field rules of the inquire operation (lengths, uuid, `label`/`value`).",
  ),
  card_not_object: schema(
    "`adaptive_card_payload` is not a JSON object.",
    "Send an Adaptive Card object or leave the field out.",
  ),
  card_too_large: schema(
    `The card is larger than ${limits.maxCardBytes} bytes serialized, so it was not inspected further.`,
    "Shorten the card: a person reads a summary, not a document.",
  ),
  card_type_invalid: schema("The card's `type` is not `AdaptiveCard`.", 'Set `"type": "AdaptiveCard"` on the card.'),
  card_version_unsupported: schema(
    "The card's `version` is missing or above 1.5, the highest the app renders.",
    'Set `"version"` to a string from "1.0" to "1.5".',
  ),
  element_invalid: schema("An element is not a JSON object.", "Make every element an object with a `type`."),
  element_type_missing: schema("An element has no `type` string.", "Give every element one of the allowed types."),
  element_not_allowed: schema(
    "This element type is not rendered: only TextBlock, FactSet, ColumnSet/Column, Container, " +
      "Table/TableRow/TableCell and Image are.",
    "Replace the element with an allowed one.",
  ),
  action_not_allowed: schema(
    "Cards carry no actions: the person's only choices are the app's own Approve and Deny.",
    "Remove `actions`, `selectAction` and every `Action.*` element.",
  ),
  background_image_not_allowed: schema(
    "`backgroundImage` can draw content the text does not say.",
    "Remove `backgroundImage`; use an Image element with a bundled asset.",
  ),
  templating_not_allowed: schema(
    `Templating (\`$data\`, \`$when\`, \`\${…}\`) would let the rendered card differ from the screened one.`,
    "Expand the template on your side and send the final card.",
  ),
  fallback_not_allowed: schema(
    "`fallback`, `fallbackText` and `requires` make what renders depend on the app, not on what was screened.",
    "Remove them; every allowed element renders on every app.",
  ),
  unknown_property: schema(
    "This property is not on the allow-list of its element, so its effect on rendering is unknown.",
    "Remove the property; the README lists the properties each element accepts.",
  ),
  missing_property: schema(
    "A property this element needs to render is missing.",
    "Add the property (for example `text` on a TextBlock).",
  ),
  invalid_property_value: schema(
    "A property has a value outside the Adaptive Cards 1.5 schema or the layer's bounds.",
    "Use one of the values the schema allows.",
  ),
  image_url_not_allowed: schema(
    "Images never load from a URL (of any scheme, `data:` included): " +
      "a fetched image can change after screening or track the person.",
    "Name a bundled asset such as `asset:icon/payment` instead.",
  ),
  image_not_bundled: schema(
    "The image names no asset the app ships.",
    "Use one of the bundled assets the README lists.",
  ),
  depth_exceeded: schema(
    `Elements are nested deeper than ${limits.maxDepth} levels, and deeper elements were not inspected.`,
    "Flatten the card.",
  ),
  too_many_elements: schema(
    `The card has more than ${limits.maxElements} elements, and the rest were not inspected.`,
    "Show fewer elements; summarise.",
  ),
  text_too_long: schema(`A text is longer than ${limits.maxTextCharacters} characters.`, "Shorten the text."),
  too_many_facts: schema(
    `A FactSet has more than ${limits.maxFacts} facts.`,
    "Keep the facts that matter for the decision.",
  ),
  table_too_large: schema(
    `A Table has more than ${limits.maxTableColumns} columns or ${limits.maxTableRows} rows.`,
    "Summarise the table.",
  ),
  violations_truncated: {
    source: "schema",
    severity: "warning",
    explanation: `More violations were found than the ${limits.maxReportedViolations} reported.`,
    fix: "Fix the reported ones and screen the card again.",
  },
  bidi_control: content(
    "error",
    "Bidirectional control characters reorder what the person reads (the Trojan Source trick).",
    "Remove U+202A–U+202E, U+2066–U+2069 and the directional marks; the app lays out each script itself.",
  ),
  invisible_character: content(
    "error",
    "Invisible characters (zero-width, format, tag or filler characters) hide content from the person.",
    "Remove the characters shown as \\u{…} in `value`.",
  ),
  control_character: content(
    "error",
    "Control characters have no visible form and can change how text renders.",
    "Remove them; line breaks are allowed only inside the card's texts.",
  ),
  unassigned_character: content(
    "error",
    "Unassigned code points and lone surrogates render differently on every device, if at all.",
    "Send assigned Unicode characters only.",
  ),
  private_use_character: content(
    "error",
    "Private-use characters have no agreed glyph, so the person cannot know what they read.",
    "Replace them with standard characters.",
  ),
  combining_mark_stack: content(
    "error",
    "Stacked combining marks can draw over neighbouring text.",
    "Use at most four combining marks on one character.",
  ),
  mixed_script: content(
    "error",
    "A word mixes Latin with Cyrillic or Greek letters, which can imitate another word (Unicode TS #39).",
    "Write each word in one script.",
  ),
  hidden_content: content(
    "error",
    "`isVisible: false` hides an element from the person while it stays in the card.",
    "Remove hidden elements.",
  ),
  blank_text: content(
    "error",
    "The text is empty or only whitespace or invisible characters, so it shows nothing or only space.",
    "Remove the element or give it visible text.",
  ),
  whitespace_padding: content(
    "warning",
    "Long runs of blank lines or spaces can push content out of the person's view.",
    "Use spacing and separators instead of whitespace.",
  ),
  markdown_link: content(
    "warning",
    "A Markdown link is shown; the person could mistake it for where the action goes.",
    "Leave links out; the action is what the card describes.",
  ),
  link_hides_target: content(
    "error",
    "A Markdown link shows text that is not its target, so the person cannot see where it leads.",
    "Remove the link, or write the address as plain text.",
  ),
  url_in_text: content(
    "warning",
    "A URL in the text could be mistaken for where the action goes.",
    "Leave URLs out unless the person needs them to decide.",
  ),
  domain_in_text: content(
    "warning",
    "A domain name in the text could be mistaken for where the action goes.",
    "Leave domain names out unless the person needs them to decide.",
  ),
  impersonation: content(
    "error",
    "The text speaks as the service's own confirmation UI or verdict, which only the app may do.",
    "Describe the action; leave verification and instructions about Approve and Deny to the app.",
  ),
  amount_mismatch: content(
    "error",
    "An amount in the card contradicts the amount in `summary_title` or `summary_detail`.",
    "Make the card's total match the title; line items may not exceed it.",
  ),
  currency_mismatch: content(
    "error",
    "The card's amounts are in a currency that `summary_title` or `summary_detail` does not name.",
    "State the same currency in the title and the card.",
  ),
  account_mismatch: content(
    "error",
    "An account or card number in the card differs from the one in `summary_title` or `summary_detail`.",
    "Show the same account in the title and the card.",
  ),
  classifier_flagged: {
    source: "classifier",
    severity: "error",
    explanation: "The content classifier flagged this text.",
    fix: "Rewrite the text so that it plainly describes the action.",
  },
} satisfies Record<string, Entry>;

export type ViolationType = keyof typeof violationTypes;
