import type { Query, Result } from "./operations.ts";
import type { CallOptions, Transport, WithResponse } from "./transport.ts";

export type SecuredAccountsQuery = Query<"listSecuredAccounts">;
export type SecuredAccountsPage = Result<"listSecuredAccounts">;
export type SecuredAccount = NonNullable<SecuredAccountsPage["rows"]>[number];

/**
 * `svc.securedAccounts.list(query)`: `for await` walks every matching account, newest first, following
 * `next_cursor` (keyset paging: an account secured meanwhile is not read twice); `.page()` reads one page
 * with `total`, the matching rows across all pages.
 */
export class SecuredAccountList implements AsyncIterable<SecuredAccount> {
  private readonly transport: Transport;
  private readonly query: SecuredAccountsQuery;
  private readonly options: CallOptions | undefined;

  constructor(transport: Transport, query: SecuredAccountsQuery, options: CallOptions | undefined) {
    this.transport = transport;
    this.query = query;
    this.options = options;
  }

  /** One page: the query's `offset` or `cursor`, else the first. */
  page(): Promise<WithResponse<SecuredAccountsPage>> {
    return this.read(this.query);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<SecuredAccount> {
    let page = await this.page();
    for (;;) {
      yield* page.rows ?? [];
      const cursor = page.next_cursor;
      if (cursor === null || cursor === undefined) return;
      const { offset: _offset, ...filters } = this.query;
      page = await this.read({ ...filters, cursor });
    }
  }

  private read(query: SecuredAccountsQuery) {
    return this.transport.call<SecuredAccountsPage>({
      method: "GET",
      path: "/secured-accounts/list",
      input: query,
      flat: false,
      options: this.options,
    });
  }
}
