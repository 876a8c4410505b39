import { SerialPortMock } from 'serialport';

// @serialport/binding-mock's MockBinding (its CommonJS build, the one serialport itself loads),
// reached through serialport because the package's "exports" hide its type declarations.
const MockBinding = SerialPortMock.binding;
type MockPortBinding = Awaited<ReturnType<typeof MockBinding.open>>;

/**
 * serialport's MockBinding plus what it lacks: a way to pull the cable. `unplug()` fails the
 * pending read the way a vanished USB device does (so the stream closes with `disconnected`) and
 * makes open() fail until `replug()`.
 */
export function createMockSerial(path = '/dev/ttyMOCK0') {
  MockBinding.reset();
  MockBinding.createPort(path, { record: true });
  let unplugged = false;
  const opened: MockPortBinding[] = [];
  const binding = {
    ...MockBinding,
    async open(options: Parameters<typeof MockBinding.open>[0]) {
      if (unplugged) throw new Error(`Error: No such file or directory, cannot open ${options.path}`);
      const port = await MockBinding.open(options);
      opened.push(port);
      return port;
    },
  };
  const current = (): MockPortBinding | undefined => {
    const last = opened.at(-1);
    return last?.isOpen ? last : undefined;
  };
  return {
    path,
    binding,
    /** The open port as the device sees it (`emitData`, `recording`), or undefined. */
    current,
    /** All bytes the gateway wrote, across reconnects. */
    written(): string {
      return opened.map((p) => p.recording.toString('latin1')).join('');
    },
    /** The machine sends bytes. */
    emit(text: string): void {
      const port = current();
      if (!port) throw new Error('mock serial port is not open');
      port.emitData(Buffer.from(text, 'latin1'));
    },
    unplug(): void {
      unplugged = true;
      const port = current() as unknown as { pendingRead: ((err?: Error) => void) | null; read: MockPortBinding['read'] } | undefined;
      if (!port) return;
      const gone = Object.assign(new Error('device disconnected (EIO)'), { code: 'EIO' });
      port.read = async () => {
        throw gone;
      };
      const pending = port.pendingRead;
      port.pendingRead = null;
      pending?.(gone);
    },
    replug(): void {
      unplugged = false;
    },
    opens: () => opened.length,
  };
}
