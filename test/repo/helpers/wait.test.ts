import { describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers/wait.js';

describe('waitFor, the suite’s one wait', () => {
  it('returns the first truthy value, asking again while the predicate says no or throws', async () => {
    let calls = 0;
    const value = await waitFor(() => {
      calls += 1;
      if (calls === 1) throw new Error('not yet');
      return calls >= 3 ? { calls } : null;
    });
    expect(value).toEqual({ calls: 3 });
  });

  it('on timeout names what it waited for and the last value the predicate gave', async () => {
    await expect(
      waitFor(() => ({ state: 'awaiting_payment' }).state === 'vended' && 1, { timeoutMs: 30, what: 'the vend' }),
    ).rejects.toThrow('timed out after 30 ms waiting for the vend; last value: false');
  });

  it('on timeout names the last error the predicate threw, and asks a `what` function only then', async () => {
    let asked = 0;
    const what = () => {
      asked += 1;
      return 'the broker';
    };
    const failing = waitFor(
      () => {
        throw new Error('ECONNREFUSED');
      },
      { timeoutMs: 30, what },
    );
    await expect(failing).rejects.toThrow('timed out after 30 ms waiting for the broker; last error: Error: ECONNREFUSED');
    expect(asked).toBe(1);
  });
});
