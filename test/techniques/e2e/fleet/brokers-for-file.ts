import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MqttClient } from 'mqtt';
import { afterAll, beforeAll } from 'vitest';
import { startBrokers } from './fleet.js';
import type { Mosquitto } from './mosquitto.js';

export interface BrokersForFile {
  /** The device broker (A) and the relay broker (B), bridged as shipped; set before the file's first test. */
  readonly brokerA: Mosquitto;
  readonly brokerB: Mosquitto;
  /** Their directory (configs, data, password file). */
  readonly dir: string;
  /** Clients the tests connected: ended after the file's last test. */
  readonly clients: MqttClient[];
}

/**
 * For a test file: the shipped bridged Mosquitto pair with `accounts`, started in a fresh
 * `vendgate-<label>-` directory before the first test; after the last, `beforeClose` runs, the
 * clients end, both brokers stop and the directory is removed.
 */
export function brokersForFile(
  label: string,
  accounts: Record<string, string>,
  beforeClose: () => Promise<void> = async () => {},
): BrokersForFile {
  let dir: string | undefined;
  let brokers: { brokerA: Mosquitto; brokerB: Mosquitto } | undefined;
  const clients: MqttClient[] = [];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `vendgate-${label}-`));
    brokers = await startBrokers(dir, accounts);
  }, 60_000);
  afterAll(async () => {
    await beforeClose();
    await Promise.all(clients.map((c) => c.endAsync(true)));
    await brokers?.brokerA.stop();
    await brokers?.brokerB.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  const started = () => {
    if (!brokers || !dir) throw new Error('brokersForFile: the brokers start in beforeAll');
    return { ...brokers, dir };
  };
  return {
    get brokerA() {
      return started().brokerA;
    },
    get brokerB() {
      return started().brokerB;
    },
    get dir() {
      return started().dir;
    },
    clients,
  };
}
