import { type Body, card, columns, container, facts, requestId, table, text, textTable } from "./proposals.ts";

type Action = {
  summary_title: string;
  category: string;
  summary_detail?: { label: string; value: string };
  trusted_account_id?: string;
};
const inquire = (action: Action, body?: unknown[], cardExtra: Record<string, unknown> = {}): Body => ({
  request_id: requestId,
  opaque_id: "binding-4f2a",
  action,
  ...(body === undefined ? {} : { adaptive_card_payload: card(body, cardExtra) }),
});
const image = (url: string, extra: Record<string, unknown> = {}) => ({ type: "Image", url, size: "small", ...extra });
const heading = (value: string) => text(value, { size: "Medium", weight: "Bolder", style: "heading" });

/** Realistic cards, in the spirit of the public Adaptive Card samples, that must pass without an error. */
export const benignCards: { name: string; body: Body }[] = [
  {
    name: "flight booking",
    body: inquire(
      { summary_title: "Book flight LH 400 Frankfurt to New York for 612.40 EUR", category: "travel" },
      [
        columns(
          [image("asset:icon/flight")],
          [heading("Frankfurt (FRA) → New York (JFK)"), text("Lufthansa LH 400", { isSubtle: true, spacing: "None" })],
        ),
        facts(
          ["Departs", "Thu 20 Nov 2026, 10:05"],
          ["Arrives", "Thu 20 Nov 2026, 12:55 local time"],
          ["Seat", "14C (aisle)"],
          ["Fare", "Economy Light, 1 cabin bag"],
          ["Total", "612.40 EUR"],
        ),
      ],
      { $schema: "http://adaptivecards.io/schemas/adaptive-card.json" },
    ),
  },
  {
    name: "expense report",
    body: inquire(
      {
        summary_title: "Approve expense report for 1,284.90 USD",
        category: "expenses",
        summary_detail: { label: "Submitter", value: "Dana Okafor" },
      },
      [
        heading("Expense report: Berlin offsite"),
        facts(
          ["Submitted", "2026-11-18"],
          ["Cost center", "R&D 4410"],
          ["Policy", "Within travel policy"],
          ["Total", "$1,284.90"],
        ),
        text("Receipts are attached in the finance system.", { isSubtle: true, wrap: true }),
      ],
    ),
  },
  {
    name: "calendar invite",
    body: inquire({ summary_title: "Accept the invite: Quarterly planning", category: "calendar" }, [
      columns(
        [image("asset:icon/calendar")],
        [heading("Quarterly planning"), text("Organizer: priya.natarajan@acme.example", { isSubtle: true })],
      ),
      facts(["When", "Tue 2 Dec, 14:00–15:30 CET"], ["Where", "Room Ada, 3rd floor"], ["Attendees", "8 people"]),
      text("Agenda: roadmap review, hiring plan, open questions.", { wrap: true }),
    ]),
  },
  {
    name: "pull-request merge",
    body: inquire(
      {
        summary_title: "Merge pull request #482 into main",
        category: "code",
        summary_detail: { label: "Repository", value: "acme/payments-api" },
      },
      [
        columns(
          [image("asset:icon/code-merge")],
          [heading("Add idempotency keys to refunds"), text("#482 by mkowalski, 3 commits", { isSubtle: true })],
        ),
        facts(
          ["Checks", "12 passed, 0 failed"],
          ["Reviews", "2 approvals"],
          ["Files changed", "9 (+214 −37)"],
          ["Target", "main"],
        ),
      ],
    ),
  },
  {
    name: "payment with a FactSet",
    body: inquire(
      {
        summary_title: "Pay 120.50 EUR to Acme Office Supplies",
        category: "payment",
        summary_detail: { label: "IBAN", value: "DE89 3704 0044 0532 0130 00" },
      },
      [
        heading("Payment"),
        facts(
          ["Payee", "Acme Office Supplies GmbH"],
          ["IBAN", "DE89 3704 0044 0532 0130 00"],
          ["Reference", "INV-2026-0117"],
          ["Amount", "120.50 EUR"],
          ["Execution date", "21 Nov 2026"],
        ),
      ],
    ),
  },
  {
    name: "table of line items",
    body: inquire({ summary_title: "Order office supplies for 120.50 EUR", category: "purchase" }, [
      heading("Order #10045"),
      {
        ...textTable(
          ["Item", "Qty", "Price"],
          ["Ergonomic chair", "1", "89.00 EUR"],
          ["Desk lamp", "1", "21.50 EUR"],
          ["Notebooks (5 pack)", "2", "10.00 EUR"],
          ["Total", "", "120.50 EUR"].map((cell) => cell || "—"),
        ),
        firstRowAsHeader: true,
        showGridLines: true,
        gridStyle: "accent",
      },
    ]),
  },
  {
    name: "hotel reservation",
    body: inquire({ summary_title: "Reserve 2 nights at Hotel Adlon for €540", category: "travel" }, [
      columns(
        [image("asset:icon/hotel")],
        [heading("Hotel Adlon Kempinski"), text("Unter den Linden 77, Berlin", { isSubtle: true })],
      ),
      facts(
        ["Check-in", "Mon 8 Dec 2026"],
        ["Check-out", "Wed 10 Dec 2026"],
        ["Room", "Deluxe double, breakfast included"],
        ["Cancellation", "Free until 6 Dec, 18:00"],
        ["Total", "€540"],
      ),
    ]),
  },
  {
    name: "train ticket",
    body: inquire({ summary_title: "Buy ICE ticket Munich to Berlin, 79.90 EUR", category: "travel" }, [
      container(
        text("ICE 1006", { weight: "Bolder" }),
        facts(
          ["Departs", "07:04 München Hbf"],
          ["Arrives", "11:02 Berlin Hbf"],
          ["Class", "2nd, seat 45"],
          ["Price", "79.90 EUR"],
        ),
      ),
    ]),
  },
  {
    name: "subscription renewal",
    body: inquire({ summary_title: "Renew the design tool subscription for £144 a year", category: "subscriptions" }, [
      heading("Annual plan, 3 seats"),
      text("Renews on 1 January 2027. Billed yearly; you can cancel any time before the renewal date.", { wrap: true }),
      facts(["Seats", "3"], ["Price per seat", "£48"], ["Total", "£144"]),
    ]),
  },
  {
    name: "database deletion",
    body: inquire(
      { summary_title: "Delete the staging database snapshot from 3 November", category: "infrastructure" },
      [
        columns(
          [image("asset:icon/database")],
          [heading("Snapshot stg-db-2026-11-03"), text("Size 48 GB, taken 3 Nov 2026 02:00 UTC", { isSubtle: true })],
        ),
        text("The snapshot cannot be restored after deletion. Production data is not affected.", {
          color: "Attention",
          wrap: true,
        }),
      ],
    ),
  },
  {
    name: "production deploy",
    body: inquire({ summary_title: "Deploy payments-api v2.14.0 to production", category: "deploy" }, [
      facts(
        ["Service", "payments-api"],
        ["Version", "v2.14.0 (from v2.13.2)"],
        ["Window", "Today 22:00–22:30 UTC"],
        ["Rollback", "Automatic on error rate above 1%"],
      ),
    ]),
  },
  {
    name: "refund to a card",
    body: inquire({ summary_title: "Refund 35.00 EUR to the card ending in 4242", category: "refunds" }, [
      facts(
        ["Order", "A-77812"],
        ["Reason", "Item arrived damaged"],
        ["Card", "Visa •••• 4242"],
        ["Amount", "35.00 EUR"],
      ),
    ]),
  },
  {
    name: "money transfer with a trusted account",
    body: inquire(
      {
        summary_title: "Transfer 2,500.00 CHF to savings",
        category: "transfer",
        summary_detail: { label: "To", value: "Savings account 0012-3456-7890" },
        trusted_account_id: "0b3c7e5a-2f4d-4a8b-9c1e-6d5f4a3b2c1d",
      },
      [
        facts(
          ["From", "Checking ••••1234"],
          ["To", "Savings account 0012-3456-7890"],
          ["Amount", "CHF 2,500.00"],
          ["When", "Immediately"],
        ),
      ],
    ),
  },
  {
    name: "grocery order table in a container",
    body: inquire({ summary_title: "Place grocery order for $64.17", category: "shopping" }, [
      container(
        heading("Weekly groceries"),
        table(
          [[text("Item", { weight: "Bolder" })], [text("Price", { weight: "Bolder" })]],
          [[text("Organic milk, 2 l")], [text("$4.29")]],
          [[text("Sourdough bread")], [text("$6.50")]],
          [[text("Coffee beans, 1 kg")], [text("$24.99")]],
          [[text("Fruit box")], [text("$28.39")]],
          [[text("Total", { weight: "Bolder" })], [text("$64.17", { weight: "Bolder" })]],
        ),
      ),
    ]),
  },
  {
    name: "document signature",
    body: inquire({ summary_title: "Sign the NDA with Northwind Traders", category: "legal" }, [
      columns(
        [image("asset:icon/signature")],
        [heading("Mutual non-disclosure agreement"), text("Version 3, 4 pages", { isSubtle: true })],
      ),
      facts(["Counterparty", "Northwind Traders Ltd."], ["Term", "2 years"], ["Governing law", "England and Wales"]),
    ]),
  },
  {
    name: "multilingual: German, Greek and Russian words",
    body: inquire({ summary_title: "Überweisung von 80 EUR an Σοφία Παπαδοπούλου", category: "transfer" }, [
      text("Перевод для Иван Петров, München", { wrap: true }),
      facts(["Betrag", "80 EUR"], ["Zweck", "Geburtstagsgeschenk 🎁"]),
    ]),
  },
  {
    name: "a title without a card",
    body: inquire({
      summary_title: "Unlock the front door",
      category: "home",
      summary_detail: { label: "Door", value: "Front door, main house" },
    }),
  },
  {
    name: "emoji with joiners and presentation selectors",
    body: inquire({ summary_title: "Book the family ticket 👨‍👩‍👧 for 42 EUR", category: "tickets" }, [
      text("Zoo day pass ✈️ not included; picnic area ❤️ open", { wrap: true }),
      facts(["Price", "42 EUR"]),
    ]),
  },
];
