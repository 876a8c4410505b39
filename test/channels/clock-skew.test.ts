import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/store/index.js';
import { createOutbox, type Outbox } from '../../src/outbox/index.js';
import { createClockSkewAlarm, CLOCK_SKEW_ALARM } from '../../src/channels/webhook/clock-skew.js';
import { createManualClock } from '../../src/util/clock.js';
import { tempDir } from '../helpers/temp.js';

describe('clock skew alarm', () => {
  let dir: ReturnType<typeof tempDir>;
  let db: Db;
  let outbox: Outbox;
  beforeEach(() => {
    dir = tempDir();
    db = openDatabase(join(dir.path, 'v.db'));
    outbox = createOutbox({ db, clock: createManualClock(), deviceId: 'd1' });
  });
  afterEach(() => {
    db.close();
    dir.cleanup();
  });

  const alarmMessages = () =>
    outbox
      .pending(100)
      .filter((r) => r.topic === `alarms/${CLOCK_SKEW_ALARM}`)
      .map((r) => r.payload);

  it('raises a retained alarm when the provider clock is more than a minute off, once, and clears it when back', () => {
    const alarm = createClockSkewAlarm({ db, outbox });
    alarm.observe(5);
    expect(outbox.openAlarms()).toEqual([]);
    alarm.observe(-95);
    alarm.observe(-120);
    expect(outbox.openAlarms().map((a) => a.name)).toEqual([CLOCK_SKEW_ALARM]);
    alarm.observe(2);
    expect(outbox.openAlarms()).toEqual([]);
    const messages = alarmMessages();
    expect(messages).toHaveLength(2);
    expect(JSON.parse(messages[0]!)).toMatchObject({ name: CLOCK_SKEW_ALARM, skewSec: -95 });
    expect(messages[1]).toBe('');
  });

  it('knows after a restart that the alarm is still open, so the first good delivery clears it', () => {
    createClockSkewAlarm({ db, outbox }).observe(300);
    const afterRestart = createClockSkewAlarm({ db, outbox });
    afterRestart.observe(0);
    expect(outbox.openAlarms()).toEqual([]);
  });
});
