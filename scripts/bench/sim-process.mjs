/**
 * The provider simulator in a process of its own, for the benches that time the service's path
 * through its provider (actuation.mjs): a real provider is another machine, and a simulator inside
 * the bench's process answered the service's GETs late whenever that process collected its garbage
 * or polled the actuator's log. Started with fork(); says `{ url }` once listening, then answers
 * `{ id, op: 'paid', invoiceId }` with `{ id, event }` (the invoice paid, and the simulator's signed
 * `payment_intent.succeeded` event for it) and exits on `{ op: 'stop' }`.
 *   SIM_PROVIDER [gerege], SIM_SEED [18]
 */
import { createSimulator } from '../../dist/simulator/index.js';
import { payAndSucceededEvent } from './lib.mjs';

const sim = createSimulator({ provider: process.env.SIM_PROVIDER ?? 'gerege', seed: Number(process.env.SIM_SEED ?? 18) });
await sim.start();
process.on('message', (message) => {
  if (message?.op === 'stop') {
    void sim.stop().finally(() => process.exit(0));
    return;
  }
  if (message?.op !== 'paid') return;
  void (async () => {
    try {
      process.send({ id: message.id, event: await payAndSucceededEvent(sim, message.invoiceId) });
    } catch (err) {
      process.send({ id: message.id, error: String(err?.message ?? err) });
    }
  })();
});
process.on('disconnect', () => void sim.stop().finally(() => process.exit(0)));
process.send({ url: sim.url });
