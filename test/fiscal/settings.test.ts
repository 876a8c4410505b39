import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { loadSettings, parseSettings, DEMO_CONFIG_PATH } from '../../src/settings/index.js';
import { redactUrl } from '../../src/settings/sections/fiscal.js';
import { createRegister } from '../../src/fiscal/index.js';
import { createManualClock } from '../../src/util/clock.js';
import { silentLogger } from '../../src/util/logger.js';
import { tempDir } from '../helpers/temp.js';
import { settingsProblems } from '../helpers/core.js';

const device = { id: 'vm-001', currency: 'MNT', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] };

describe('fiscal settings', () => {
  it('no register by default: no receipts, no stop of sales', async () => {
    const settings = parseSettings({ device });
    expect(settings.fiscal).toMatchObject({ register: 'none', stopSalesAfterHours: 0, alarmUnreachableAfterMin: 15 });
    expect(await createRegister(settings, { clock: createManualClock(), logger: silentLogger() })).toBeNull();
  });

  it('the demo configuration issues receipts from the sandbox register', () => {
    const { settings } = loadSettings({ path: DEMO_CONFIG_PATH, env: {} });
    expect(settings.fiscal.register).toBe('sandbox');
  });

  it('ebarimt names every missing key, and a district code must be 4 digits', () => {
    expect(settingsProblems(() => parseSettings({ device, fiscal: { register: 'ebarimt', ebarimt: { districtCode: '35' } } }))).toEqual([
      'fiscal.ebarimt.districtCode: the district code: 4 digits such as 3505',
      expect.stringMatching(/^fiscal\.ebarimt\.url: required for register ebarimt/),
      expect.stringMatching(/^fiscal\.ebarimt\.merchantTin: required/),
      expect.stringMatching(/^fiscal\.ebarimt\.posNo: required/),
    ]);
    const ok = parseSettings({
      device,
      fiscal: {
        register: 'ebarimt',
        ebarimt: { url: 'http://127.0.0.1:7080', merchantTin: '1234567', posNo: '10001', districtCode: '3505' },
      },
    });
    expect(ok.fiscal.ebarimt).toMatchObject({ vatPayer: true, cityTax: false, classificationCode: '2111000', branchNo: '001' });
  });

  it('webkassa: the token is a secret, refused in the file and read from VENDGATE_FISCAL_WEBKASSA_TOKEN', () => {
    const dir = tempDir();
    try {
      const path = join(dir.path, 'config.yaml');
      const fiscal = { register: 'webkassa', webkassa: { url: 'https://devkkm.example.kz', cashboxId: 'SWK00001' } };
      writeFileSync(path, stringify({ device, fiscal: { ...fiscal, webkassa: { ...fiscal.webkassa, token: 'in-the-file' } } }));
      const refused = settingsProblems(() => loadSettings({ path, env: { VENDGATE_FISCAL_WEBKASSA_TOKEN: 't0ken' } }));
      expect(refused).toEqual([
        expect.stringMatching(/^fiscal\.webkassa\.token: secrets are not read from the file; set VENDGATE_FISCAL_WEBKASSA_TOKEN/),
      ]);
      expect(refused.join(' ')).not.toContain('in-the-file');
      writeFileSync(path, stringify({ device, fiscal }));
      expect(settingsProblems(() => loadSettings({ path, env: {} }))).toEqual([
        'fiscal.webkassa.login: required for register webkassa: login (and VENDGATE_FISCAL_WEBKASSA_PASSWORD), or a session token in VENDGATE_FISCAL_WEBKASSA_TOKEN',
      ]);
      const { settings, environment } = loadSettings({ path, env: { VENDGATE_FISCAL_WEBKASSA_TOKEN: 't0ken' } });
      expect(settings.fiscal.webkassa).toMatchObject({ token: 't0ken', offlineHoursLimit: 72 });
      expect(environment).toContain('VENDGATE_FISCAL_WEBKASSA_TOKEN');
    } finally {
      dir.cleanup();
    }
  });

  it('refuses unknown registers, unknown keys, bad time zones and negative hours, each with its path', () => {
    expect(
      settingsProblems(() =>
        parseSettings({ device, fiscal: { register: 'paper', timeZone: 'Mars/Olympus', stopSalesAfterHours: -1, lotery: 1 } }),
      ),
    ).toEqual([
      expect.stringMatching(/^fiscal\.lotery: unknown key/),
      expect.stringMatching(/^fiscal\.register: /),
      'fiscal.timeZone: an IANA time zone such as Asia/Ulaanbaatar or Asia/Almaty',
      expect.stringMatching(/^fiscal\.stopSalesAfterHours: /),
    ]);
  });

  it('an eBarimt address is never shown in full', () => {
    expect(redactUrl('http://10.20.30.40:7080/rest')).toBe('http://10.…');
    expect(redactUrl(undefined)).toBe('(not set)');
  });
});
