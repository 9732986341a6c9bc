/** The few operations the element calls, with the page's site key (grant tokens for create-verification-link). */

/** A refusal the element shows: `origin` when the key does not allow this page, `unreachable` when nothing answered. */
export class WidgetError extends Error {
  readonly kind: "origin" | "unreachable" | "refused";
  readonly statusCode: number;

  constructor(kind: WidgetError["kind"], message: string, statusCode = 0) {
    super(message);
    this.kind = kind;
    this.statusCode = statusCode;
  }
}

type Json = Record<string, unknown>;

export interface Link {
  request_id: string;
  deep_link: string;
  web_url: string;
  qr_code_url: string;
  expires_at: string;
  sdk_type: string;
}

export interface StatusRecord {
  status: string;
  token?: string | null;
  expires_at?: string;
  age_verdict?: string;
}

export interface PartnerConfig {
  gate_type: string;
  status: string;
  notarize_offered: boolean;
}

export class WidgetApi {
  readonly base: string;
  readonly siteKey: string;

  constructor(base: string, siteKey: string) {
    this.base = base;
    this.siteKey = siteKey;
  }

  /** The envelope's `data` of an operation; a `data.error` or a non-200 answer throws. */
  async #call(path: string, credential: string, body?: Json, query?: Json): Promise<Json> {
    const url = new URL(this.base + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    let response: Response;
    try {
      response = await fetch(url, {
        method: body ? "POST" : "GET",
        headers: { authorization: `Bearer ${credential}`, ...(body ? { "content-type": "application/json" } : {}) },
        body: body && JSON.stringify(body),
      });
    } catch {
      throw await this.#whyUnread();
    }
    const reply = (await response.json().catch(() => ({}))) as { data?: Json & { error?: Json } };
    const error = reply.data?.error;
    if (response.status !== 200 || !reply.data || error) {
      const status = Number(error?.statusCode ?? response.status);
      throw new WidgetError("refused", String(error?.message ?? `HTTP ${response.status}`), status);
    }
    return reply.data;
  }

  /**
   * A browser hides an answer its CORS headers do not allow, and the service adds none for a site key
   * refused on this origin. widget.js answers every origin: when it is reachable the refusal was the origin.
   */
  async #whyUnread(): Promise<WidgetError> {
    const reachable = await fetch(`${this.base}/widget.js`, { method: "HEAD" }).then(
      (r) => r.ok,
      () => false,
    );
    return reachable
      ? new WidgetError("origin", "origin not allowed for this site key", 403)
      : new WidgetError("unreachable", "service unreachable");
  }

  async partnerConfig(gate: string): Promise<PartnerConfig> {
    return (await this.#call("/sdk/partner-config", this.siteKey, undefined, { gate })).data as PartnerConfig;
  }

  async createSession(partnerUserId?: string, metadata?: Json): Promise<string> {
    const data = await this.#call("/sdk/create-session", this.siteKey, {
      ...(partnerUserId ? { partner_user_id: partnerUserId } : {}),
      ...(metadata ? { metadata } : {}),
    });
    return (data.data as { anchor_grant_token: string }).anchor_grant_token;
  }

  async createLink(grant: string, body: Json): Promise<Link> {
    return (await this.#call("/sdk/create-verification-link", grant, body)).data as Link;
  }

  /** The status record; `waitSeconds` above 0 holds the answer until the status changes (a long-poll). */
  async status(requestId: string, waitSeconds: number): Promise<StatusRecord> {
    return (await this.#call("/verification/status", this.siteKey, undefined, {
      request_id: requestId,
      wait_seconds: waitSeconds || undefined,
    })) as unknown as StatusRecord;
  }
}
