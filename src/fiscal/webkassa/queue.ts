/**
 * One call at a time per cashbox: Webkassa wants the requests of one cashbox in sequence (one that
 * overlaps another is refused). Keyed by the register's URL and the cashbox's unique number, so two
 * adapters of one cashbox in one process share the line too. A failed call never blocks the next.
 */
const lines = new Map<string, Promise<unknown>>();

export function inCashboxLine<T>(cashboxKey: string, work: () => Promise<T>): Promise<T> {
  const previous = lines.get(cashboxKey) ?? Promise.resolve();
  const next = previous.then(work, work);
  const settled = next.then(
    () => undefined,
    () => undefined,
  );
  lines.set(cashboxKey, settled);
  void settled.then(() => {
    if (lines.get(cashboxKey) === settled) lines.delete(cashboxKey);
  });
  return next;
}
