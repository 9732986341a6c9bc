import { createServer, type Server } from "node:http";

/**
 * A partner's page for trying `<svc-verify>` by hand: the widget in a checkout form on its own origin,
 * under a strict Content-Security-Policy, answered at once by a sandbox human. Submitting the form shows
 * the token the hidden field carried, as the partner's server would receive it.
 */
export const demoPageOrigin = "http://127.0.0.1:8081";

const html = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c);

const layout = (body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Demo shop</title>${body}</html>`;

export function serveDemoPage(options: {
  gatewayUrl: string;
  siteKey: string;
  gate: string;
  svcUserId: string;
}): Promise<Server> {
  const gateway = new URL(options.gatewayUrl).origin;
  const csp = `default-src 'none'; script-src ${gateway}; connect-src ${gateway}; img-src ${gateway}; form-action 'self'; base-uri 'none'`;
  const checkout = layout(`<script src="${gateway}/v1/widget.js"></script></head><body>
<h1>Demo shop: checkout</h1>
<form method="post" action="/order">
<svc-verify sitekey="${html(options.siteKey)}" gate="${html(options.gate)}" svc-user-id="${html(options.svcUserId)}" partner-user-id="demo-buyer"></svc-verify>
<p><button type="submit">Place order</button></p>
</form>
<p>The sandbox human named by svc-user-id confirms at once. Open it again within 10 minutes for a Recent Presence pass.</p>
</body>`);
  const server = createServer((req, res) => {
    const headers = { "content-type": "text/html; charset=utf-8", "content-security-policy": csp };
    if (req.method === "POST" && req.url === "/order") {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const token = new URLSearchParams(Buffer.concat(chunks).toString()).get("svc-verify-token") ?? "";
        res.writeHead(200, headers).end(
          layout(`</head><body><h1>Order received</h1><p>The form carried svc-verify-token:</p>
<pre>${html(token || "(empty: not verified, or a Recent Presence pass, which has no token)")}</pre>
<p>A partner's server checks it with POST ${html(gateway)}/v1/sdk/verify-token (see the README).</p>
<p><a href="/">Back to the checkout</a></p></body>`),
        );
      });
      return;
    }
    if (req.url !== "/") return void res.writeHead(404, headers).end(layout("</head><body>Not found</body>"));
    res.writeHead(200, headers).end(checkout);
  });
  const { hostname, port } = new URL(demoPageOrigin);
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(Number(port), hostname, () => resolve(server));
  });
}
