import type { Db } from '../../store/index.js';

interface Pending<I, O> {
  item: I;
  resolve: (result: O) => void;
  reject: (err: unknown) => void;
}

/**
 * Writes that arrive in the same turn of the event loop share one transaction: one WAL commit for
 * the lot instead of one each, which is most of the cost of storing a delivery. Each caller is still
 * answered only after its own row is committed; if the commit fails, every caller in it gets the
 * error (the listener answers 500 and the provider retries).
 */
export function createGroupCommit<I, O>(db: Db, write: (item: I) => O): (item: I) => Promise<O> {
  let queue: Pending<I, O>[] = [];

  function flush(): void {
    const batch = queue;
    queue = [];
    let results: O[];
    try {
      results = db.transaction(() => batch.map((p) => write(p.item))).immediate();
    } catch (err) {
      for (const p of batch) p.reject(err);
      return;
    }
    batch.forEach((p, index) => p.resolve(results[index]!));
  }

  return (item) =>
    new Promise<O>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      if (queue.length === 1) setImmediate(flush);
    });
}
