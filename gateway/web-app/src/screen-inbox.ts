import { api, NotOnThisServer } from "./api.ts";
import { type Card, cardView, type Verdict } from "./card-view.ts";
import { button, el, statusLine, uniqueId } from "./dom.ts";
import { guard } from "./guard.ts";
import { t, when } from "./i18n.ts";
import { followInbox, type Inbox, type InboxNotice, type InboxRequest } from "./inbox-feed.ts";
import { assertPasskey } from "./passkey.ts";
import type { Screen } from "./screen.ts";

/** A deep link (`svc://verify/<request_id>?t=…`), a web_url (`…/flow/<request_id>#t=…`) or a bare request id. */
function requestTarget(input: string): { requestId: string; secret: string | undefined } | undefined {
  const found = /(req_[0-9a-f]{32})(?:[?#]t=([0-9A-Za-z%]+))?/.exec(input.trim());
  if (!found?.[1]) return undefined;
  return { requestId: found[1], secret: found[2] ? decodeURIComponent(found[2]) : undefined };
}

/**
 * The inbox: notices, pending requests and queued agent cards, live from the inbox's event stream. Cards
 * are decided together: every card marked approve or deny goes into one passkey ceremony
 * (confirm-challenge, the assertion over it, confirm). Where the server has no inbox stream yet, the cards
 * come from `GET /agentlink/cards` and a Refresh button.
 */
export const inboxScreen: Screen = (main, navigate) => {
  const status = statusLine();
  const verdicts = new Map<string, Verdict>();
  const live = el("p", { class: "hint" });
  const noticesSection = el("section", { "aria-labelledby": "notices-title", hidden: true });
  const requestsSection = el("section", { "aria-labelledby": "requests-title", hidden: true });
  const cardsList = el("div", { class: "cards" });
  const cardsSection = el("section", { "aria-labelledby": "cards-title", hidden: true });
  const empty = el("p", { class: "empty", hidden: true }, t("inboxEmpty"));
  let shownCards: Card[] = [];

  const showNotices = (notices: InboxNotice[]) => {
    noticesSection.replaceChildren(
      el("h2", { id: "notices-title" }, t("noticesTitle")),
      el(
        "ul",
        { class: "items" },
        ...notices.map((notice) => {
          // Every notice has a Dismiss button: the notice's text tells a screen reader which one this is.
          const textId = uniqueId("notice");
          return el(
            "li",
            {},
            el("p", { id: textId }, noticeText(notice)),
            button(
              t("noticeDismiss"),
              guard(status.say, async () => {
                await api("POST", "/app/notices/dismiss", { notice_id: notice.notice_id });
              }),
              { "aria-describedby": textId },
            ),
          );
        }),
      ),
    );
    noticesSection.hidden = notices.length === 0;
  };

  const showRequests = (requests: InboxRequest[]) => {
    requestsSection.replaceChildren(
      el("h2", { id: "requests-title" }, t("requestsTitle")),
      el(
        "ul",
        { class: "items" },
        ...requests.map((request) => {
          const textId = uniqueId("request");
          return el(
            "li",
            {},
            el(
              "p",
              { id: textId },
              request.gate_type === "age"
                ? t("requestAge", { platform: request.platform.name, age: request.age_threshold ?? "" })
                : t("requestHuman", { platform: request.platform.name }),
            ),
            el("p", { class: "hint" }, t("expires", { date: when(request.expires_at) })),
            button(t("requestOpen"), () => navigate(`/app/requests/${request.request_id}`), {
              "aria-describedby": textId,
            }),
          );
        }),
      ),
    );
    requestsSection.hidden = requests.length === 0;
  };

  const showCards = (cards: Card[]) => {
    const same = cards.length === shownCards.length && cards.every((card, i) => card.id === shownCards[i]?.id);
    if (same) return;
    shownCards = cards;
    for (const id of verdicts.keys()) if (!cards.some((card) => card.id === id)) verdicts.delete(id);
    cardsList.replaceChildren(
      ...cards.map((card) => cardView(card, verdicts.get(card.id) ?? "later", (v) => verdicts.set(card.id, v))),
    );
    cardsSection.hidden = cards.length === 0;
    // Opened from a push notification: the card it named, drawn only now, is brought into view.
    if (location.hash.startsWith("#card-"))
      document.getElementById(decodeURIComponent(location.hash.slice(1)))?.scrollIntoView();
  };

  const show = (inbox: Inbox) => {
    showNotices(inbox.notices);
    showRequests(inbox.requests);
    showCards(inbox.cards);
    empty.hidden = inbox.notices.length + inbox.requests.length + inbox.cards.length > 0;
  };

  const loadCards = async () => {
    const { cards } = await api<{ cards: Card[] }>("GET", "/agentlink/cards");
    show({ requests: [], notices: [], cards });
  };

  const confirmDecisions = guard(status.say, async () => {
    const decisions = shownCards
      .map((card) => ({ card_id: card.id, verdict: verdicts.get(card.id) ?? "later" }))
      .filter((decision) => decision.verdict !== "later");
    if (decisions.length === 0) return status.say(t("noDecisions"), "problem");
    const challenge = await api<{ challenge_id: string; options: PublicKeyCredentialRequestOptionsJSON }>(
      "POST",
      "/agentlink/confirm-challenge",
      { decisions, origin: location.origin },
    );
    const response = await assertPasskey(challenge.options);
    await api("POST", "/agentlink/confirm", {
      decisions,
      passkey_assertion: { challenge_id: challenge.challenge_id, response },
    });
    status.say(t("decisionsConfirmed", { count: decisions.length }));
    if (!streaming) await loadCards();
  });

  cardsSection.append(
    el("h2", { id: "cards-title" }, t("cardsTitle")),
    cardsList,
    button(t("confirmDecisions"), confirmDecisions, { class: "primary" }),
  );

  const linkId = uniqueId("request-link");
  const linkInput = el("input", { id: linkId, name: "request", autocomplete: "off", required: true });
  const openForm = el(
    "form",
    { class: "inline" },
    el("label", { for: linkId }, t("openLinkLabel")),
    linkInput,
    el("button", { type: "submit" }, t("openLinkButton")),
  );
  openForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const target = requestTarget(linkInput.value);
    if (!target) return status.say(t("openLinkInvalid"), "problem");
    navigate(`/app/requests/${target.requestId}${target.secret ? `#t=${encodeURIComponent(target.secret)}` : ""}`);
  });

  const refresh = button(t("inboxRefresh"), guard(status.say, loadCards), { hidden: true });
  main.append(
    el("h1", { tabindex: "-1" }, t("inboxTitle")),
    live,
    status.element,
    empty,
    noticesSection,
    requestsSection,
    cardsSection,
    refresh,
    el("section", { "aria-labelledby": "open-title" }, el("h2", { id: "open-title" }, t("openLinkTitle")), openForm),
  );

  let streaming = false;
  const stop = new AbortController();
  const run = guard(status.say, async () => {
    try {
      streaming = true;
      live.textContent = t("inboxLive");
      await followInbox(stop.signal, show);
    } catch (error) {
      streaming = false;
      live.textContent = "";
      if (!(error instanceof NotOnThisServer)) throw error;
      // This server has no inbox yet: the cards alone, on request.
      refresh.hidden = false;
      await loadCards();
    }
  });
  run();
  return () => stop.abort();
};

function noticeText(notice: InboxNotice): string {
  const platform = notice.platform?.name ?? "";
  switch (notice.kind) {
    case "account_revoked":
      return t("noticeRevoked", { platform, date: when(notice.at) });
    case "relink_offer":
      return t("noticeRelink", { platform });
    case "agent_bound":
      return t("noticeAgentBound", { agent: notice.agent?.display_name ?? "" });
  }
}
