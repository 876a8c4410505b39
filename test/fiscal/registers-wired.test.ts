import { describe, expect, it } from 'vitest';
import { createRegister } from '../../src/fiscal/index.js';
import { WEBKASSA_SIM_DEFAULTS } from '../../src/simulator/index.js';
import { createManualClock } from '../../src/util/clock.js';
import { silentLogger } from '../../src/util/logger.js';
import { testSettings } from '../helpers/core.js';
import { tempDir } from '../helpers/temp.js';
import { saleRequest, startRegisters } from '../techniques/contract/register-harness.js';

/**
 * The settings name a register and the factory builds that adapter (loaded only then): the
 * settings' fields reach the register, over real HTTP to the simulated PosAPI and Webkassa.
 */
describe('fiscal.register ebarimt | webkassa: the configured adapter, against the simulator', () => {
  const deps = { clock: createManualClock(), logger: silentLogger() };

  it('ebarimt: the PosAPI address, merchant, POS, branch and district of the settings issue the receipt', async () => {
    const sim = await startRegisters();
    const dir = tempDir();
    try {
      const settings = testSettings(dir.path, {
        fiscal: {
          register: 'ebarimt',
          ebarimt: { url: sim.url, merchantTin: '10000000001', posNo: '10020030', branchNo: '1', districtCode: '2501', cityTax: true },
        },
      });
      const register = (await createRegister(settings, deps))!;
      expect(register.name).toBe('ebarimt');
      const outcome = await register.issue(saleRequest());
      expect(outcome).toMatchObject({ kind: 'issued', receipt: { registerId: expect.stringMatching(/^\d{33}$/) } });
    } finally {
      dir.cleanup();
    }
  });

  it('webkassa: login and password from the settings, the cashbox of the settings', async () => {
    const sim = await startRegisters();
    const dir = tempDir();
    try {
      const D = WEBKASSA_SIM_DEFAULTS;
      const settings = testSettings(dir.path, {
        fiscal: {
          register: 'webkassa',
          webkassa: { url: sim.url, login: D.login, password: D.password, apiKey: D.apiKey, cashboxId: D.cashbox.uniqueNumber },
        },
      });
      const register = (await createRegister(settings, deps))!;
      expect(register.name).toBe('webkassa');
      const request = saleRequest({
        currency: 'KZT',
        lines: [{ name: 'Cola 0.5 l', classificationCode: null, unit: null, quantity: 1, unitPrice: 1160 }],
      });
      expect(await register.issue(request)).toMatchObject({ kind: 'issued' });
      // The same key again: the register answers the check it holds, no second one.
      expect(await register.issue(request)).toMatchObject({ kind: 'issued' });
      expect(sim.registers.webkassa.records().cashboxes[0]!.checks).toHaveLength(1);
    } finally {
      dir.cleanup();
    }
  });

  it('webkassa without a token or a login is a configuration error naming what to set', () => {
    const dir = tempDir();
    try {
      expect(() =>
        testSettings(dir.path, { fiscal: { register: 'webkassa', webkassa: { url: 'http://127.0.0.1:1', cashboxId: 'SWK1' } } }),
      ).toThrow(
        /fiscal\.webkassa\.login: required for register webkassa: login \(and VENDGATE_FISCAL_WEBKASSA_PASSWORD\), or a session token/,
      );
    } finally {
      dir.cleanup();
    }
  });
});
