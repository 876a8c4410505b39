import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildCore, type Core } from '../helpers/core.js';
import { createCatalog } from '../../src/catalog/index.js';
import { dexServiceFor } from '../../src/dex/index.js';
import { createDexCommands, DEX_PER_MINUTE, DEX_REUSE_MS } from '../../src/mqtt/commands/families/dex.js';
import type { DexControl } from '../../src/mqtt/index.js';

/**
 * `cmd/dex` needs no key, so anyone on the broker may ask; every fresh read is a row on the card and
 * a message on the `dex` topic. The bound, on the real audit and a real database file.
 */
let core: Core;
beforeEach(() => {
  core = buildCore();
});
afterEach(() => core.close());

function control(): DexControl {
  const catalog = createCatalog({ db: core.db, clock: core.clock, logger: core.logger, outbox: core.outbox }, core.settings);
  const { audit, visits } = dexServiceFor(core.settings, { db: core.db, clock: core.clock, outbox: core.outbox, catalog });
  // The answers as cmd/dex and cmd/visit type them (COMMAND_RESULTS): the header, and where the file went.
  return {
    read: (by) => ({ ...audit.read('read', by).header, topic: 'dex' }),
    resend: (read, by) => ({ ...audit.resend(read, by), topic: 'dex' }),
    visit: (who, fills, by) => {
      const { read, ...visit } = visits.record(who, fills, by);
      return { ...visit, dex: { ...read.header, topic: 'dex' } };
    },
  };
}

const reads = () => core.count('SELECT count(*) AS n FROM dex_reads');
const published = () => core.count("SELECT count(*) AS n FROM outbox WHERE topic = 'dex'");

describe('cmd/dex under a flood', () => {
  it('a thousand asks in a second make one read; asks spread over a minute make at most one per reuse window', () => {
    const commands = createDexCommands({ clock: core.clock });
    const dex = control();
    for (let i = 0; i < 1_000; i += 1) commands.run('dex', { requestId: `r${i}` }, dex, 'mqtt');
    expect(reads()).toBe(1);
    expect(published()).toBe(1);
    for (let i = 0; i < 600; i += 1) {
      core.clock.advance(100);
      commands.run('dex', { requestId: `s${i}` }, dex, 'mqtt');
    }
    // 60 s of asking every 100 ms: one read per DEX_REUSE_MS, and the first.
    expect(reads()).toBe(1 + Math.floor(60_000 / DEX_REUSE_MS));
  });

  it('re-sent reads are bounded too: past the limit a minute the answer says when to ask again and nothing is sent', () => {
    const commands = createDexCommands({ clock: core.clock });
    const dex = control();
    // 40 reads kept (dex.keepReads is 50), taken on demand an hour apart.
    for (let i = 0; i < 40; i += 1) {
      commands.run('dex', { requestId: `read-${i}` }, dex, 'mqtt');
      core.clock.advance(3_600_000);
    }
    const before = published();
    // A collector asks for every one of them again at once, twice.
    const answers = [...Array(80).keys()].map((i) => {
      try {
        return commands.run('dex', { requestId: `again-${i}`, read: (i % 40) + 1 }, dex, 'mqtt') as { read: number; shared?: true };
      } catch (err) {
        return err as { code: string; message: string };
      }
    });
    const limited = answers.filter((a) => 'code' in a);
    expect(published() - before).toBe(DEX_PER_MINUTE);
    // The first 30 were sent; the second ask of those is shared (nothing sent); the other ten of each round are refused.
    expect(answers.filter((a) => 'shared' in a)).toHaveLength(DEX_PER_MINUTE);
    expect(limited).toHaveLength(20);
    expect(limited[0]).toMatchObject({ code: 'VG_ERR_RATE_LIMITED', message: expect.stringMatching(/ask again in 60 s/) });
    // A minute later the rest can be had.
    core.clock.advance(60_000);
    expect(commands.run('dex', { requestId: 'later', read: 35 }, dex, 'mqtt')).toMatchObject({ read: 35 });
    expect(published() - before).toBe(DEX_PER_MINUTE + 1);
    expect(reads()).toBe(40);
  });
});
