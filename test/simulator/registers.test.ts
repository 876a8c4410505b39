import { describe, expect, it } from 'vitest';
import { describeSimulator } from '../../src/simulator/index.js';
import { startSimulator } from './harness.js';

describe('fiscal registers in the simulator', () => {
  it('are served beside either provider, and describeSimulator says where and with which credentials', async () => {
    for (const provider of ['gerege', 'qutpay'] as const) {
      const sim = await startSimulator({ provider });
      const info = await fetch(`${sim.url}/rest/info`);
      expect(info.status).toBe(200);
      const text = describeSimulator(sim);
      expect(text).toContain(`eBarimt PosAPI: ${sim.url}/rest/receipt`);
      expect(text).toContain('merchant TIN 10000000001');
      expect(text).toContain('cashbox SWK00000001');
      expect(text).toContain(`${sim.url}/__sim/ebarimt/faults`);
    }
  });

  it("keep their calls in their own records, not the provider's", async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    await fetch(`${sim.url}/rest/info`);
    await fetch(`${sim.url}/api/v4/Cashboxes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(sim.records().requests).toEqual([]);
    expect(sim.registers.ebarimt.records().calls).toMatchObject([{ method: 'GET', path: '/rest/info', status: 200 }]);
    expect(sim.registers.webkassa.records().calls).toMatchObject([{ method: 'POST', path: '/api/v4/Cashboxes', status: 200 }]);
  });

  it('a provider route that does not exist still answers in the provider shape', async () => {
    const sim = await startSimulator({ provider: 'qutpay' });
    const answer = await fetch(`${sim.url}/nothing-here`);
    expect(answer.status).toBe(404);
    expect(((await answer.json()) as { error: string }).error).toBe('not_found');
  });
});
