import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SerialPort } from 'serialport';
import { VmcModel, type VmcOptions } from './model.js';
import { waitFor } from '../../helpers/wait.js';

/** A VMC model on the far end of a socat pseudo-terminal pair: the gateway opens `gatewayPath`. */
export interface VmcOnPty {
  vmc: VmcModel;
  gatewayPath: string;
  stop(): Promise<void>;
}

export async function startVmcOnPty(options: Partial<VmcOptions> = {}): Promise<VmcOnPty> {
  const found = spawnSync('socat', ['-V'], { stdio: 'ignore' });
  if (found.error || found.status !== 0) throw new Error('socat is required for the MDB model: run scripts/install-test-deps.sh');
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-vmc-'));
  const gatewayPath = join(dir, 'gateway');
  const machinePath = join(dir, 'machine');
  const socat: ChildProcess = spawn('socat', ['-d', '-d', `pty,raw,echo=0,link=${gatewayPath}`, `pty,raw,echo=0,link=${machinePath}`], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  socat.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
  await waitFor(() => log.includes('starting data transfer loop') && existsSync(gatewayPath) && existsSync(machinePath), {
    what: () => `socat (${log})`,
  });

  const port = new SerialPort({ path: machinePath, baudRate: 115_200, autoOpen: false });
  await new Promise<void>((resolve, reject) => port.open((err) => (err ? reject(err) : resolve())));
  const vmc = new VmcModel(options);
  vmc.onSay = (line) => {
    if (port.isOpen) port.write(`${line}\r\n`);
  };
  let buffer = '';
  port.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('latin1');
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl).replace(/\r$/, '');
      buffer = buffer.slice(nl + 1);
      if (line) vmc.feed(line);
    }
  });
  return {
    vmc,
    gatewayPath,
    async stop() {
      vmc.close();
      if (port.isOpen) await new Promise<void>((resolve) => port.close(() => resolve()));
      if (socat.exitCode === null) socat.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
