import { type Link, WidgetApi, WidgetError } from "./api.ts";
import { warnAboutAttributes } from "./attributes.ts";
import { type GateStatusDetail, runGateCheck } from "./flow.ts";
import { widgetSheet } from "./styles.ts";
import { type Text, textFor } from "./text.ts";

/** Spec "Versioning": the old widget events fire beside `svc:gate-status` until this instant. */
const legacySunset = Date.UTC(2027, 0, 15);
const legacyEvents = ["census-status", "multipass-status"];
/** At or below this width the page is a phone's: the app is on this device, so a link beats a QR code. */
const phoneQuery = "(max-width: 600px)";

/**
 * `{base_url}`, from this script's own address: `{base_url}/widget.js` or the versioned
 * `{base_url}/widget.<hash>.js`. Read while the script runs, the only moment `currentScript` names it.
 */
const baseUrl = (() => {
  const src = (document.currentScript as HTMLScriptElement | null)?.src ?? "";
  return src ? new URL(".", src).href.replace(/\/$/, "") : "";
})();

const el = <K extends keyof HTMLElementTagNameMap>(tag: K, props: object = {}): HTMLElementTagNameMap[K] =>
  Object.assign(document.createElement(tag), props);

/**
 * `<svc-verify>`: runs a whole gate check on a partner's page and reports it as `svc:gate-status`
 * events, and inside a form as the hidden field `svc-verify-token`. The token goes nowhere else.
 */
class SvcVerify extends HTMLElement {
  /** The page's clock, for the legacy events' sunset; tests replace it. */
  static now: () => number = () => Date.now();

  /** Echoed in the gate's webhooks: set it before the element is connected (or before the page finished loading). */
  metadata: Record<string, unknown> | undefined;

  readonly #root = this.attachShadow({ mode: "open" });
  /** Announces each status to screen readers; the visible text says the same. */
  readonly #live = el("div", { role: "status", className: "sr" });
  readonly #body = el("div");
  #run = 0;
  #text: Text = textFor("");

  constructor() {
    super();
    this.#root.adoptedStyleSheets = [widgetSheet()];
    this.#live.setAttribute("aria-live", "polite");
    const box = el("div", { className: "box" });
    box.append(this.#body, this.#live);
    this.#root.append(box);
  }

  connectedCallback(): void {
    warnAboutAttributes(this);
    if (document.readyState === "loading")
      document.addEventListener("DOMContentLoaded", () => this.isConnected && this.#start(), { once: true });
    else queueMicrotask(() => this.isConnected && this.#start());
  }

  disconnectedCallback(): void {
    this.#run++;
  }

  #attr(name: string): string | undefined {
    return this.getAttribute(name)?.trim() || undefined;
  }

  #start(): void {
    const run = ++this.#run;
    const cancelled = () => run !== this.#run;
    this.#text = textFor(this.#attr("lang") ?? document.documentElement.lang);
    const theme = this.#attr("theme");
    (this.#root.firstElementChild as HTMLElement).className =
      `box ${theme === "dark" || theme === "light" ? theme : "auto"}`;
    const field = this.#field();
    if (field) field.value = "";
    const gate = this.#attr("gate") ?? this.#attr("scope");
    const siteKey = this.#attr("sitekey");
    this.#show([this.#message(this.#text.preparing, "muted")]);
    if (!gate || !siteKey || !baseUrl) {
      console.error("<svc-verify>: the sitekey and gate attributes are required");
      this.#failed(this.#text.unavailable, false);
      return;
    }
    runGateCheck(
      new WidgetApi(baseUrl, siteKey),
      {
        gate,
        partnerUserId: this.#attr("partner-user-id"),
        partnerUserRef: this.#attr("partner-user-ref"),
        svcUserId: this.#attr("svc-user-id"),
        notarize: this.hasAttribute("notarize") || this.hasAttribute("enroll"),
        returnUrl: this.#attr("return-url"),
        metadata: this.metadata,
      },
      {
        cancelled,
        shown: (link, gateType) => this.#showLink(link, gateType),
        changed: (detail) => this.#changed(detail),
      },
    ).catch((error: unknown) => {
      if (cancelled()) return;
      const t = this.#text;
      const kind = error instanceof WidgetError ? error.kind : "refused";
      if (kind === "origin") return this.#failed(t.refusedOrigin(location.origin), false);
      console.error("<svc-verify>:", (error as Error).message);
      this.#failed(kind === "unreachable" ? t.unreachable : t.error, true);
    });
  }

  #message(text: string, className = ""): HTMLParagraphElement {
    return el("p", { textContent: text, className });
  }

  #show(nodes: Node[], announce?: string): void {
    this.#body.replaceChildren(...nodes);
    if (announce) this.#live.textContent = announce;
  }

  #failed(text: string, retry: boolean): void {
    const message = this.#message(text, "bad");
    message.setAttribute("role", "alert");
    const nodes: Node[] = [message];
    if (retry) {
      const again = el("button", { type: "button", textContent: this.#text.retry });
      again.addEventListener("click", () => this.#start());
      nodes.push(again);
    }
    this.#show(nodes);
  }

  #showLink(link: Link, gateType: string): void {
    const t = this.#text;
    const title = el("h2", { textContent: gateType === "age" ? t.ageTitle : t.humanTitle });
    const here = el("a", { href: link.web_url, target: "_blank", rel: "noopener", className: "secondary" });
    here.textContent = t.continueHere;
    const onPhone = matchMedia(phoneQuery).matches;
    const invite = onPhone
      ? el("a", { href: link.deep_link, className: "primary", textContent: t.openApp })
      : el("img", { src: link.qr_code_url, alt: t.qrAlt, width: 176, height: 176 });
    const nodes: Node[] = [title];
    if (!onPhone) nodes.push(this.#message(t.scan));
    nodes.push(invite, el("br"), here);
    this.#show(nodes);
  }

  #changed(detail: GateStatusDetail): void {
    const t = this.#text;
    const status = detail.status as keyof Text;
    const text = typeof t[status] === "string" ? (t[status] as string) : t.error;
    if (detail.status === "pending") {
      const waiting = this.#message(text, "muted");
      this.#body.append(waiting);
      this.#live.textContent = text;
    } else if (detail.status === "completed" || detail.status === "pass") {
      this.#show([this.#message(text)], text);
    } else {
      this.#failed(text, true);
      this.#live.textContent = text;
    }
    const field = this.#field();
    if (field) field.value = detail.token ?? "";
    const init = { detail, bubbles: true, composed: true };
    this.dispatchEvent(new CustomEvent("svc:gate-status", init));
    if (SvcVerify.now() < legacySunset)
      for (const name of legacyEvents) this.dispatchEvent(new CustomEvent(name, init));
  }

  /** The hidden `svc-verify-token` input, in the light DOM so the enclosing form submits it; none outside a form. */
  #field(): HTMLInputElement | undefined {
    if (!this.closest("form")) return undefined;
    let field = this.querySelector<HTMLInputElement>(":scope > input[name='svc-verify-token']");
    if (!field) {
      field = el("input", { type: "hidden", name: "svc-verify-token" });
      this.append(field);
    }
    return field;
  }
}

if (!customElements.get("svc-verify")) customElements.define("svc-verify", SvcVerify);
