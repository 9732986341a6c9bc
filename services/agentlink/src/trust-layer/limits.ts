/** The trust layer's limits (issue 13); the README lists them. Each bounds the work one card can cost. */
export const limits = {
  /** UTF-8 bytes of `adaptive_card_payload` serialized without whitespace. Checked before any walk. */
  maxCardBytes: 28 * 1024,
  /** Nesting of elements: a TextBlock in the card's body is at depth 1, in a Table cell at depth 4. */
  maxDepth: 8,
  /** Elements of every kind, Columns, TableRows and TableCells included. */
  maxElements: 200,
  /** Characters (code points) of one text: a TextBlock's text, a fact's title or value, an Image's altText. */
  maxTextCharacters: 2000,
  /** Facts in one FactSet. */
  maxFacts: 30,
  maxTableColumns: 10,
  maxTableRows: 50,
  /** Violations echoed in `data.error`; the decision is made on all of them. */
  maxReportedViolations: 50,
} as const;

/** The highest Adaptive Cards schema version the person's app renders. */
export const MAX_CARD_VERSION = { major: 1, minor: 5 } as const;
