import { BUNDLED_ASSETS } from "./bundled-assets.ts";
import type { Findings } from "./findings.ts";
import { limits, MAX_CARD_VERSION } from "./limits.ts";
import { pointer } from "./violation.ts";

/** A string the person reads, where it is in the body, and what labels it (a fact's title, a row's first cell). */
export type VisibleText = {
  path: string;
  text: string;
  multiline: boolean;
  label?: string;
  /** What the character pass learnt for the later rules (`TextHint`): set by `checkCharacters`. */
  hints?: number;
};

type Check = (value: unknown) => boolean;
/** How a property is checked: a value check, or the kind of content it holds. */
type Property = Check | "elements" | "columns" | "rows" | "cells" | "facts" | "table-columns" | "text" | "image";
type ElementSpec = Record<string, Property>;

const oneOf = (...values: string[]): Check => {
  const allowed = new Set(values.map((value) => value.toLowerCase()));
  return (value) => typeof value === "string" && allowed.has(value.toLowerCase());
};
const isBoolean: Check = (value) => typeof value === "boolean";
/** Pixel sizes stay within a phone screen, so none can push content out of view. */
const isPixels: Check = (value) =>
  typeof value === "string" && /^\d{1,4}px$/.test(value) && Number.parseInt(value, 10) <= 1000;
const isWeight: Check = (value) => typeof value === "number" && Number.isFinite(value) && value > 0 && value <= 1000;

const spacing = oneOf("none", "small", "default", "medium", "large", "extraLarge", "padding");
const horizontalAlignment = oneOf("left", "center", "right");
const verticalAlignment = oneOf("top", "center", "bottom");
const containerStyle = oneOf("default", "emphasis", "good", "attention", "warning", "accent");

/** Properties of every element in Adaptive Cards 1.5 that are safe to render (`isVisible: true` only). */
const common: ElementSpec = {
  type: () => true,
  id: (value) => typeof value === "string" && /^[A-Za-z0-9_.-]{1,64}$/.test(value),
  spacing,
  separator: isBoolean,
  height: oneOf("auto", "stretch"),
  isVisible: isBoolean,
};
const containerLike: ElementSpec = {
  ...common,
  items: "elements",
  style: containerStyle,
  verticalContentAlignment: verticalAlignment,
  bleed: isBoolean,
  minHeight: isPixels,
};
const cellAlignment: ElementSpec = {
  horizontalCellContentAlignment: horizontalAlignment,
  verticalCellContentAlignment: verticalAlignment,
};

/** The allow-list: element type → the properties it may carry. Anything else is refused. */
const elementSpecs: Record<string, ElementSpec> = {
  TextBlock: {
    ...common,
    text: "text",
    color: oneOf("default", "dark", "light", "accent", "good", "warning", "attention"),
    fontType: oneOf("default", "monospace"),
    horizontalAlignment,
    isSubtle: isBoolean,
    maxLines: (value) => Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 100,
    size: oneOf("default", "small", "medium", "large", "extraLarge"),
    weight: oneOf("default", "lighter", "bolder"),
    wrap: isBoolean,
    style: oneOf("default", "heading"),
  },
  FactSet: { ...common, facts: "facts" },
  Image: {
    ...common,
    url: "image",
    altText: "text",
    size: oneOf("auto", "stretch", "small", "medium", "large"),
    style: oneOf("default", "person"),
    width: isPixels,
    height: (value) => isPixels(value) || oneOf("auto", "stretch")(value),
    horizontalAlignment,
  },
  Container: { ...containerLike },
  ColumnSet: {
    ...common,
    columns: "columns",
    style: containerStyle,
    bleed: isBoolean,
    minHeight: isPixels,
    horizontalAlignment,
  },
  Column: {
    ...containerLike,
    width: (value) => isWeight(value) || isPixels(value) || oneOf("auto", "stretch")(value),
  },
  Table: {
    ...common,
    ...cellAlignment,
    columns: "table-columns",
    rows: "rows",
    firstRowAsHeader: isBoolean,
    showGridLines: isBoolean,
    gridStyle: containerStyle,
  },
  TableRow: { ...common, ...cellAlignment, cells: "cells", style: containerStyle },
  TableCell: { ...containerLike },
};
/** Elements that may appear in a card's `body` or a container's `items`. */
const BODY_ELEMENTS = new Set(["TextBlock", "FactSet", "Image", "Container", "ColumnSet", "Table"]);

const cardSpec: ElementSpec = {
  type: () => true,
  version: () => true,
  body: "elements",
  $schema: oneOf(
    "http://adaptivecards.io/schemas/adaptive-card.json",
    "https://adaptivecards.io/schemas/adaptive-card.json",
  ),
  lang: (value) => typeof value === "string" && /^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$/.test(value),
  minHeight: isPixels,
  verticalContentAlignment: verticalAlignment,
};
const factSpec: ElementSpec = { title: "text", value: "text" };
const tableColumnSpec: ElementSpec = {
  ...cellAlignment,
  type: oneOf("TableColumnDefinition"),
  width: (value) => isWeight(value) || isPixels(value),
};
const REQUIRED: Record<string, string[]> = {
  TextBlock: ["text"],
  FactSet: ["facts"],
  Image: ["url"],
  Fact: ["title", "value"],
};

/** Properties refused whatever the element, each with the violation that names why. */
const ACTION_PROPERTIES = new Set(["actions", "selectAction", "refresh"]);
const FALLBACK_PROPERTIES = new Set(["fallback", "fallbackText", "requires"]);

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * Walks an Adaptive Card against the allow-list, reporting structure violations and collecting every
 * visible text. The walk is bounded by the depth, element, fact and table limits, so a hostile card
 * costs at most a constant amount of work beyond its (already size-checked) bytes.
 */
export function walkCard(card: unknown, path: string, findings: Findings): VisibleText[] {
  const walker = new CardWalker(findings);
  walker.card(card, path);
  return walker.texts;
}

class CardWalker {
  readonly texts: VisibleText[] = [];
  #elements = 0;
  readonly #findings: Findings;

  constructor(findings: Findings) {
    this.#findings = findings;
  }

  card(card: unknown, path: string): void {
    if (!isRecord(card)) {
      this.#findings.add("card_not_object", path, card);
      return;
    }
    if (card.type !== "AdaptiveCard")
      this.#findings.add("card_type_invalid", pointer(path, "type"), card.type ?? "(missing)");
    if (!supportedVersion(card.version)) {
      this.#findings.add("card_version_unsupported", pointer(path, "version"), card.version ?? "(missing)");
    }
    this.#properties(card, cardSpec, path, 0);
  }

  #element(node: unknown, path: string, depth: number, expected?: string): void {
    // Past the limit the count goes one over, which ends every loop of the walk (see #each).
    if (this.#elements++ >= limits.maxElements) {
      this.#findings.add("too_many_elements", path, `${limits.maxElements}+`);
      return;
    }
    if (depth > limits.maxDepth) {
      this.#findings.add("depth_exceeded", path, depth);
      return;
    }
    if (!isRecord(node)) {
      this.#findings.add("element_invalid", path, node);
      return;
    }
    const type = node.type;
    if (typeof type !== "string") {
      this.#findings.add("element_type_missing", pointer(path, "type"), type ?? "(missing)");
      return;
    }
    if (type.startsWith("Action.")) {
      this.#findings.add("action_not_allowed", pointer(path, "type"), type);
      return;
    }
    const spec = elementSpecs[type];
    if (spec === undefined || (expected === undefined ? !BODY_ELEMENTS.has(type) : type !== expected)) {
      const where = expected === undefined ? "" : ` Only a ${expected} is allowed here.`;
      this.#findings.add("element_not_allowed", pointer(path, "type"), type, `${type} is not rendered here.${where}`);
      return;
    }
    this.#properties(node, spec, path, depth, type);
  }

  #properties(node: Record<string, unknown>, spec: ElementSpec, path: string, depth: number, type?: string): void {
    for (const key of REQUIRED[type ?? ""] ?? []) {
      if (node[key] === undefined) this.#findings.add("missing_property", pointer(path, key), "(missing)");
    }
    for (const key in node) {
      const value = node[key];
      const property = Object.hasOwn(spec, key) ? spec[key] : undefined;
      // Most properties are allowed ones with a valid value, which no rule below refuses: they need no path.
      const valid = typeof property === "function" && !key.startsWith("$") && property(value);
      if (valid && !(key === "isVisible" && value === false)) continue;
      const at = pointer(path, key);
      if (key.startsWith("$") && !(key === "$schema" && spec === cardSpec))
        this.#findings.add("templating_not_allowed", at, key);
      else if (ACTION_PROPERTIES.has(key)) this.#findings.add("action_not_allowed", at, key);
      else if (FALLBACK_PROPERTIES.has(key)) this.#findings.add("fallback_not_allowed", at, key);
      else if (key === "backgroundImage") this.#findings.add("background_image_not_allowed", at, value);
      else if (key === "isVisible" && value === false) this.#findings.add("hidden_content", at, value);
      else if (property === undefined)
        this.#findings.add(
          "unknown_property",
          at,
          key,
          `${type ?? "The card"} has no property "${key}" on the allow-list.`,
        );
      else this.#property(property, value, at, depth, key);
    }
  }

  #property(property: Property, value: unknown, path: string, depth: number, key: string): void {
    if (typeof property === "function") {
      if (!property(value))
        this.#findings.add("invalid_property_value", path, value, `"${key}" has a value the layer does not render.`);
      return;
    }
    if (property === "text") {
      this.#text(value, path);
      return;
    }
    if (property === "image") {
      this.#image(value, path);
      return;
    }
    if (!Array.isArray(value)) {
      this.#findings.add("invalid_property_value", path, value, `"${key}" must be an array.`);
      return;
    }
    switch (property) {
      case "elements": {
        this.#each(value, path, Number.POSITIVE_INFINITY, (item, at) => this.#element(item, at, depth + 1));
        return;
      }
      case "columns": {
        this.#row(value, path, depth, "Column", limits.maxElements);
        return;
      }
      case "cells":
        if (value.length > limits.maxTableColumns) this.#findings.add("table_too_large", path, `${value.length} cells`);
        {
          this.#row(value, path, depth, "TableCell", limits.maxTableColumns);
          return;
        }
      case "rows":
        if (value.length > limits.maxTableRows) this.#findings.add("table_too_large", path, `${value.length} rows`);
        {
          this.#each(value, path, limits.maxTableRows, (item, at) => this.#element(item, at, depth + 1, "TableRow"));
          return;
        }
      case "facts":
        if (value.length > limits.maxFacts) this.#findings.add("too_many_facts", path, `${value.length} facts`);
        {
          this.#each(value, path, limits.maxFacts, (item, at) => this.#object(item, at, factSpec, "Fact"));
          return;
        }
      case "table-columns":
        if (value.length > limits.maxTableColumns)
          this.#findings.add("table_too_large", path, `${value.length} columns`);
        {
          this.#each(value, path, limits.maxTableColumns, (item, at) => this.#object(item, at, tableColumnSpec));
          return;
        }
    }
  }

  /** A fact or a column definition: not an element, but held to its own allow-list. */
  #object(node: unknown, path: string, spec: ElementSpec, type?: string): void {
    if (!isRecord(node)) {
      this.#findings.add("element_invalid", path, node);
      return;
    }
    const first = this.texts.length;
    this.#properties(node, spec, path, 0, type);
    if (type === "Fact" && typeof node.title === "string") this.#label(first, node.title, pointer(path, "value"));
  }

  /**
   * Columns of a ColumnSet or cells of a TableRow: a short first cell ("Total", "IBAN") labels the texts of
   * the cells after it, so the honesty rules can tell a total from a line item.
   */
  #row(items: unknown[], path: string, depth: number, expected: string, max: number): void {
    let label: string | undefined;
    this.#each(items, path, max, (item, at, index) => {
      const first = this.texts.length;
      this.#element(item, at, depth + 1, expected);
      if (index === 0)
        label = this.texts
          .slice(first)
          .map((text) => text.text)
          .join(" ");
      else if (label !== undefined && label.length <= 40) this.#label(first, label);
    });
  }

  #label(from: number, label: string, onlyPath?: string): void {
    for (let index = from; index < this.texts.length; index++) {
      const text = this.texts[index];
      if (text !== undefined && text.label === undefined && (onlyPath === undefined || text.path === onlyPath))
        text.label = label;
    }
  }

  #each(items: unknown[], path: string, max: number, visit: (item: unknown, at: string, index: number) => void): void {
    const count = Math.min(items.length, max);
    for (let index = 0; index < count && this.#elements <= limits.maxElements; index++)
      visit(items[index], pointer(path, index), index);
  }

  #text(value: unknown, path: string): void {
    if (typeof value !== "string") {
      this.#findings.add("invalid_property_value", path, value, "A text must be a string.");
      return;
    }
    if (value.length > limits.maxTextCharacters && codePoints(value) > limits.maxTextCharacters) {
      this.#findings.add("text_too_long", path, value);
    }
    if (value.includes("${")) this.#findings.add("templating_not_allowed", path, value);
    this.texts.push({ path, text: value, multiline: true });
  }

  #image(value: unknown, path: string): void {
    if (typeof value !== "string") {
      this.#findings.add("invalid_property_value", path, value, "An Image `url` must be a string.");
      return;
    }
    if (!value.startsWith("asset:")) {
      this.#findings.add("image_url_not_allowed", path, value);
      return;
    }
    if (!BUNDLED_ASSETS.has(value)) this.#findings.add("image_not_bundled", path, value);
  }
}

function supportedVersion(version: unknown): boolean {
  const match = typeof version === "string" ? /^(\d{1,3})\.(\d{1,3})$/.exec(version) : null;
  if (match === null) return false;
  const major = Number(match[1]);
  const minor = Number(match[2]);
  return major === MAX_CARD_VERSION.major && minor <= MAX_CARD_VERSION.minor;
}

/** Characters as people count them (code points), not UTF-16 units. */
export function codePoints(text: string): number {
  return text.length - (text.match(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g)?.length ?? 0);
}
