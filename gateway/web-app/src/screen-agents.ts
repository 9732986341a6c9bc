import { api } from "./api.ts";
import { button, el, statusLine, uniqueId } from "./dom.ts";
import { guard } from "./guard.ts";
import { t, when } from "./i18n.ts";
import type { Screen } from "./screen.ts";

interface Binding {
  agent: { id: string; name: string; display_name: string };
  bound_at: string;
  /** The agent's name for the person; the other approvers of its quorum cards see them by it. */
  person_label: string | null;
}

const agentName = (agent: Binding["agent"]) => agent.display_name || agent.name;

/** The person's agents: claim the link code an agent shows, list the bound agents, unbind one. */
export const agentsScreen: Screen = (main) => {
  const status = statusLine();
  const listed = el("ul", { class: "items" });

  const load = async () => {
    const { bindings } = await api<{ bindings: Binding[] }>("GET", "/app/agent-bindings");
    listed.replaceChildren(
      ...(bindings.length === 0
        ? [el("li", {}, t("agentsNone"))]
        : bindings.map(({ agent, bound_at, person_label }) =>
            el(
              "li",
              {},
              el("h2", { class: "item-title" }, agentName(agent)),
              el("p", { class: "hint" }, t("agentBoundSince", { date: when(bound_at) })),
              person_label !== null &&
                el("p", { "data-person-label": "" }, t("agentKnowsYouAs", { label: person_label })),
              button(
                t("agentUnbind"),
                guard(status.say, async () => {
                  await api("POST", "/app/agent-bindings/unbind", { agent_id: agent.id });
                  status.say(t("agentUnbound", { agent: agentName(agent) }));
                  await load();
                }),
                { "aria-label": t("agentUnbindLabel", { agent: agentName(agent) }) },
              ),
            ),
          )),
    );
  };

  const codeId = uniqueId("link-code");
  const code = el("input", { id: codeId, name: "link_code", autocomplete: "off", required: true, maxlength: "64" });
  const claim = el(
    "form",
    { class: "inline" },
    el("label", { for: codeId }, t("agentsClaimLabel")),
    code,
    el("button", { type: "submit", class: "primary" }, t("agentsClaim")),
  );
  claim.addEventListener("submit", (event) => {
    event.preventDefault();
    guard(status.say, async () => {
      const claimed = await api<Pick<Binding, "agent" | "person_label">>("POST", "/app/agent-bindings/claim", {
        link_code: code.value.trim(),
      });
      code.value = "";
      const agent = agentName(claimed.agent);
      status.say(
        claimed.person_label === null
          ? t("agentsClaimed", { agent })
          : t("agentsClaimedAs", { agent, label: claimed.person_label }),
      );
      await load();
    })();
  });

  main.append(
    el("h1", { tabindex: "-1" }, t("agentsTitle")),
    el("p", {}, t("agentsIntro")),
    claim,
    status.element,
    listed,
  );
  guard(status.say, load)();
  return undefined;
};
