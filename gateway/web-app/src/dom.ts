/**
 * Builds elements from text only: nothing the page shows is ever parsed as HTML, so an agent's or a
 * platform's text cannot become markup or script.
 */
type Child = Node | string | undefined | false;
type Attributes = Record<string, string | boolean | undefined>;

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue;
    element.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children) if (child !== undefined && child !== false) element.append(child);
  return element;
}

/** A button that runs `action` when pressed (keyboard included: it is a real button). */
export function button(label: string, action: () => void, attributes: Attributes = {}): HTMLButtonElement {
  const element = el("button", { type: "button", ...attributes }, label);
  element.addEventListener("click", action);
  return element;
}

let nextId = 0;
/** A fresh id for tying a label or a description to its control. */
export const uniqueId = (prefix: string): string => `${prefix}-${++nextId}`;

/** A polite live region: what it says is read out by screen readers without moving focus. */
export function statusLine(): { element: HTMLParagraphElement; say(text: string, kind?: "ok" | "problem"): void } {
  const element = el("p", { role: "status", class: "status" });
  return {
    element,
    say(text, kind = "ok") {
      element.textContent = text;
      element.className = `status ${kind}`;
    },
  };
}
