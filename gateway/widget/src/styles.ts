/**
 * The element's styles as one constructable stylesheet (`adoptedStyleSheets`): no `<style>` element and no
 * inline style, so a partner page's strict Content-Security-Policy (no `unsafe-inline`) needs no change.
 * Both themes keep text at WCAG AA contrast or better (normal text at least 4.5:1).
 */
const css = `
:host{display:block;max-width:22rem;font:15px/1.45 system-ui,sans-serif}
.box{--bg:#fff;--fg:#1b1b1b;--muted:#4a4a4a;--line:#8a8a8a;--accent:#0b57d0;--on-accent:#fff;--bad:#a50e0e;
background:var(--bg);color:var(--fg);border:1px solid var(--line);border-radius:10px;padding:1rem}
.dark{--bg:#1f1f1f;--fg:#f1f1f1;--muted:#c8c8c8;--line:#8d8d8d;--accent:#a8c7fa;--on-accent:#062e6f;--bad:#ffb4ab}
@media (prefers-color-scheme:dark){.auto{--bg:#1f1f1f;--fg:#f1f1f1;--muted:#c8c8c8;--line:#8d8d8d;--accent:#a8c7fa;--on-accent:#062e6f;--bad:#ffb4ab}}
h2{font-size:1.05rem;margin:0 0 .5rem}
p{margin:.4rem 0}
.muted{color:var(--muted)}
.bad{color:var(--bad);font-weight:600}
img{display:block;width:11rem;height:11rem;margin:.5rem auto;background:#fff;border-radius:4px}
a,button{display:inline-block;margin:.35rem .5rem 0 0;font:inherit;border-radius:6px;cursor:pointer}
.primary,button{background:var(--accent);color:var(--on-accent);border:0;padding:.5rem .9rem;text-decoration:none;font-weight:600}
.secondary{color:var(--accent);text-decoration:underline;padding:.5rem 0}
a:focus-visible,button:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
[hidden]{display:none}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}
`;

let sheet: CSSStyleSheet | undefined;

/** One sheet shared by every instance on the page. */
export function widgetSheet(): CSSStyleSheet {
  if (!sheet) {
    sheet = new CSSStyleSheet();
    sheet.replaceSync(css);
  }
  return sheet;
}
