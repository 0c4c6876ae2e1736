/** One page of a list, as the API sends it. */
export interface Page<T> {
  object: 'list';
  data: T[];
  /** Where the next page starts; for events never null (D6). */
  next_cursor: string | null;
  has_more: boolean;
}

/**
 * What `list()` returns, as in Stripe's SDK: await it for the first page, or iterate it with
 * `for await` and it reads page after page by itself. Each page is read only when the items
 * before it have been taken, so breaking out of the loop stops the reading.
 */
export class PagedList<T, P extends Page<T> = Page<T>> implements AsyncIterable<T>, PromiseLike<P> {
  private readonly fetchPage: (cursor: string | undefined) => Promise<P>;
  private readonly firstCursor: string | undefined;
  private first: Promise<P> | undefined;
  /** The `next_cursor` of the last page read so far (store it to resume events later). */
  cursor: string | undefined;

  constructor(fetchPage: (cursor: string | undefined) => Promise<P>, firstCursor?: string) {
    this.fetchPage = fetchPage;
    this.firstCursor = firstCursor;
    this.cursor = firstCursor;
  }

  private firstPage(): Promise<P> {
    this.first ??= this.fetchPage(this.firstCursor).then((page) => {
      this.cursor = page.next_cursor ?? this.cursor;
      return page;
    });
    return this.first;
  }

  // A thenable on purpose: `await client.trips.list()` is the first page.
  then<A = P, B = never>(
    onFulfilled?: ((page: P) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.firstPage().then(onFulfilled, onRejected);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    let page = await this.firstPage();
    for (;;) {
      yield* page.data;
      if (!page.has_more || page.next_cursor === null) return;
      page = await this.fetchPage(page.next_cursor);
      this.cursor = page.next_cursor ?? this.cursor;
    }
  }

  /** Every item, reading pages until the end or `max` items. */
  async toArray(max = Infinity): Promise<T[]> {
    const items: T[] = [];
    if (max <= 0) return items;
    for await (const item of this) {
      items.push(item);
      if (items.length >= max) break;
    }
    return items;
  }
}
