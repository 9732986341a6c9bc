/** Inquire bodies for the trust layer's tests. */
export type Body = {
  request_id: string;
  action: Record<string, unknown>;
  adaptive_card_payload?: unknown;
  [key: string]: unknown;
};

export const requestId = "6f1c2a4e-8b1d-4c3e-9f2a-1b2c3d4e5f60";

/** A proposal with a plain title, an optional card body and action overrides. */
export function proposal(cardBody?: unknown[], action: Record<string, unknown> = {}): Body {
  return {
    request_id: requestId,
    opaque_id: "binding-4f2a",
    action: { summary_title: "Approve the team offsite booking", category: "travel", ...action },
    ...(cardBody === undefined ? {} : { adaptive_card_payload: card(cardBody) }),
  };
}

export const card = (body: unknown[], extra: Record<string, unknown> = {}) => ({
  type: "AdaptiveCard",
  version: "1.5",
  body,
  ...extra,
});

export const text = (value: string, extra: Record<string, unknown> = {}) => ({
  type: "TextBlock",
  text: value,
  wrap: true,
  ...extra,
});
export const facts = (...pairs: [string, string][]) => ({
  type: "FactSet",
  facts: pairs.map(([title, value]) => ({ title, value })),
});
export const container = (...items: unknown[]) => ({ type: "Container", items });
export const columns = (...columnItems: unknown[][]) => ({
  type: "ColumnSet",
  columns: columnItems.map((items) => ({ type: "Column", width: "stretch", items })),
});
export const table = (...rows: unknown[][][]) => ({
  type: "Table",
  columns: (rows[0] ?? []).map(() => ({ width: 1 })),
  rows: rows.map((cells) => ({ type: "TableRow", cells: cells.map((items) => ({ type: "TableCell", items })) })),
});
/** A table of plain texts, one TextBlock per cell. */
export const textTable = (...rows: string[][]) => table(...rows.map((cells) => cells.map((value) => [text(value)])));
