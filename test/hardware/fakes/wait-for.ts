/** Polls `predicate` until it is truthy or the deadline passes: tests wait on conditions, never on sleeps. */
export async function waitFor<T>(
  predicate: () => T | Promise<T>,
  options: { timeoutMs?: number; what?: string } = {},
): Promise<NonNullable<T>> {
  const deadline = performance.now() + (options.timeoutMs ?? 5_000);
  for (;;) {
    const value = await predicate();
    if (value) return value as NonNullable<T>;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${options.what ?? 'condition'}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}
