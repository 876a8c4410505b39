import { cleanupList } from '../helpers/cleanup.js';
import { createKioskServer, type KioskServer, type KioskServerSettings } from '../../src/kiosk/index.js';
import type { FakeKioskDeps } from '../fakes/kiosk-deps.js';

const onCleanup = cleanupList();

/** A kiosk server on a real loopback socket, stopped after the test. */
export async function startKiosk(deps: FakeKioskDeps, settings: Partial<KioskServerSettings> = {}) {
  const server = createKioskServer(deps, { host: '127.0.0.1', port: 0, ...settings });
  onCleanup(() => server.stop());
  const { url, port } = await server.start();
  return { server, url, port };
}

/** A server that is never started: inject() only. */
export function kioskForInject(deps: FakeKioskDeps, settings: Partial<KioskServerSettings> = {}): KioskServer {
  const server = createKioskServer(deps, { host: '127.0.0.1', port: 0, ...settings });
  onCleanup(() => server.stop());
  return server;
}

export interface SseMessage {
  event: string;
  data: string;
}

/** Reads an SSE stream with fetch, collecting events and comment lines as they arrive. */
export async function openEventStream(url: string) {
  const controller = new AbortController();
  const response = await fetch(url, { signal: controller.signal });
  const events: SseMessage[] = [];
  const comments: string[] = [];
  let ended = false;
  const reading = (async () => {
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let split: number;
        while ((split = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, split);
          buffer = buffer.slice(split + 2);
          let event = 'message';
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(line);
            else if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (data.length > 0) events.push({ event, data: data.join('\n') });
        }
      }
    } catch {
      // aborted by close()
    } finally {
      ended = true;
    }
  })();
  return {
    response,
    events,
    comments,
    ended: () => ended,
    close: async () => {
      controller.abort();
      await reading;
    },
  };
}
