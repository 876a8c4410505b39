import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startFleet, type Fleet, type FleetDevice } from './fleet/fleet.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * Fleet mode on real brokers: devices on Mosquitto A, relay replicas on Mosquitto B, joined by the
 * shipped bridge config (TLS, per-device passwords, the shipped ACL); the Gerege simulator sends
 * every webhook to ONE URL in front of the relays. Faults: a relay replica killed, each broker
 * restarted while payments are in flight, a device cut off while it is paid. Size: FLEET_DEVICES
 * (default 3), FLEET_RELAYS (default 2); `npm run fleet` runs 20 × 3.
 */
const DEVICES = Math.max(2, Number(process.env.FLEET_DEVICES ?? 3));
const RELAYS = Number(process.env.FLEET_RELAYS ?? 2);
const TIMEOUT_MS = 120_000 + DEVICES * 20_000;

let fleet: Fleet;
const paid: { device: FleetDevice; orderId: number; invoiceId: string }[] = [];

beforeAll(async () => {
  fleet = await startFleet({ devices: DEVICES, relays: RELAYS, jammed: DEVICES >= 3 ? 1 : 0 });
}, TIMEOUT_MS);
afterAll(async () => {
  await fleet?.stop();
}, 60_000);

/** One customer at every device: order, pay (while `during` runs), settle. */
async function round(during?: () => Promise<void>, devices = fleet.devices): Promise<void> {
  const orders = await Promise.all(devices.map(async (device) => ({ device, ...(await fleet.createOrder(device)) })));
  const paying = Promise.all(orders.map((o) => fleet.sim.pay(o.invoiceId)));
  await during?.();
  await paying;
  const states = await Promise.all(orders.map((o) => fleet.waitSettled(o.device, o.orderId)));
  for (const [i, o] of orders.entries()) {
    expect(states[i], `${o.device.id} order ${o.orderId}`).toBe(o.device.jammed ? 'refunded' : 'vended');
    paid.push({ device: o.device, orderId: o.orderId, invoiceId: o.invoiceId });
  }
}

describe(`fleet mode: ${DEVICES} gateways, ${RELAYS} relay replicas, two bridged Mosquitto brokers`, () => {
  it(
    'every paid order vends exactly once through the one fleet URL, with relay, broker and device faults',
    async () => {
      await round();

      // A relay replica dies: the load balancer sends the fleet URL's traffic to the others.
      await fleet.relays[0]!.kill('SIGKILL');
      await round();
      await fleet.relays[0]!.start();

      // Each broker restarts while webhooks are in flight: the relays answer 503 while the relay
      // broker is away (the provider retries); the relay broker keeps the bridge's session while the
      // device broker is away.
      await round(async () => {
        await fleet.brokerB.stop();
        await fleet.brokerB.start();
      });
      await round(async () => {
        await fleet.brokerA.stop();
        await fleet.brokerA.start();
      });

      // A device loses its broker link while its customer pays; the process and its poller live on:
      // the poller finds the payment, and the webhook waits in its session until the link is back.
      const linked = fleet.devices.find((d) => d.brokerLink)!;
      const linkedOrder = await fleet.createOrder(linked);
      await linked.brokerLink!.cut();
      await fleet.sim.pay(linkedOrder.invoiceId);
      expect(await fleet.waitSettled(linked, linkedOrder.orderId)).toBe(linked.jammed ? 'refunded' : 'vended');
      await waitFor(
        () =>
          fleet.published.some(
            (p) =>
              p.topicDevice === linked.id &&
              p.body.data?.object?.id === linkedOrder.invoiceId &&
              p.body.type === 'payment_intent.succeeded',
          ),
        { timeoutMs: 60_000, what: 'the payment published while the device is cut off' },
      );
      expect(
        fleet.query(
          linked,
          "SELECT 1 FROM webhook_events WHERE object_id = ? AND type = 'payment_intent.succeeded'",
          linkedOrder.invoiceId,
        ),
      ).toEqual([]);
      await linked.brokerLink!.restore();
      await waitFor(
        () =>
          fleet.query(
            linked,
            "SELECT 1 FROM webhook_events WHERE object_id = ? AND type = 'payment_intent.succeeded' AND source = 'webhook'",
            linkedOrder.invoiceId,
          ).length === 1,
        { timeoutMs: 60_000, what: 'the session delivers the webhook once the link is back' },
      );
      paid.push({ device: linked, orderId: linkedOrder.orderId, invoiceId: linkedOrder.invoiceId });

      // A device is cut off while its customer pays: the broker keeps its webhook in its session.
      const device = fleet.devices[0]!;
      const order = await fleet.createOrder(device);
      await device.svc.kill('SIGKILL');
      await fleet.sim.pay(order.invoiceId);
      await waitFor(
        () =>
          fleet.published.some(
            (p) => p.topicDevice === device.id && p.body.data?.object?.id === order.invoiceId && p.body.type === 'payment_intent.succeeded',
          ),
        { timeoutMs: 60_000, what: 'the payment published to the offline device' },
      );
      // The rest of the fleet keeps selling while it is away (its session holds what comes for it).
      await round(undefined, fleet.devices.slice(1));
      await device.svc.restart();
      expect(await fleet.waitSettled(device, order.orderId)).toBe('vended');
      paid.push({ device, orderId: order.orderId, invoiceId: order.invoiceId });
      await fleet.sim.waitForDeliveriesIdle(60_000);

      // Exactly once, from the sim actuators' logs (the physical truth).
      for (const d of fleet.devices) {
        const mine = paid.filter((p) => p.device === d);
        if (d.jammed) {
          // Every vend jammed: nothing came out, every paid order was refunded.
          expect(d.svc.readSimLog()).toEqual([]);
          expect(fleet.query(d, "SELECT count(*) AS n FROM orders WHERE state = 'refunded'")[0]!.n).toBe(mine.length);
          continue;
        }
        const counts = new Map<number, number>();
        for (const line of d.svc.readSimLog()) counts.set(line.orderId, (counts.get(line.orderId) ?? 0) + 1);
        expect(
          [...counts.keys()].sort((a, b) => a - b),
          d.id,
        ).toEqual(mine.map((p) => p.orderId).sort((a, b) => a - b));
        expect(
          [...counts.values()].every((n) => n === 1),
          `${d.id}: one actuation per order`,
        ).toBe(true);
      }

      // No webhook went to the wrong device: every message on the relay broker names the device
      // whose order it is about (a refund: whose intent it is).
      const intentOwner = new Map(paid.map((p) => [p.invoiceId, p.device.id]));
      for (const message of fleet.published) {
        const object = message.body.data.object;
        const owner =
          typeof object.reference === 'string'
            ? fleet.devices.find((d) => object.reference.startsWith(`${d.id}-`))?.id
            : intentOwner.get(object.payment_intent);
        expect(owner, JSON.stringify(message.body)).toBe(message.topicDevice);
      }

      // The relay path carried payments to every device, and nothing was lost: each paid intent's
      // succeeded event is in its device's inbox (from the broker, or the backfill where it must).
      for (const d of fleet.devices) {
        const fromBroker = fleet.query<{ n: number }>(
          d,
          "SELECT count(*) AS n FROM webhook_events WHERE source = 'webhook' AND type = 'payment_intent.succeeded'",
        )[0]!.n;
        expect(fromBroker, `${d.id}: payments delivered by the relay`).toBeGreaterThan(0);
        // The provider saw 2xx once the relay broker had it; the bridge and the device's commit follow.
        for (const p of paid.filter((x) => x.device === d)) {
          await waitFor(
            () =>
              fleet.query(d, "SELECT 1 FROM webhook_events WHERE object_id = ? AND type = 'payment_intent.succeeded'", p.invoiceId)
                .length === 1,
            { what: `${d.id}: the succeeded event of ${p.invoiceId} in its inbox` },
          );
        }
        if (d.jammed) {
          expect(
            fleet.query(d, "SELECT 1 FROM webhook_events WHERE type = 'refund.succeeded' AND source = 'webhook'").length,
            `${d.id}: refund events routed by intent lookup`,
          ).toBeGreaterThan(0);
        }
      }
      if (process.env.FLEET_DEBUG) {
        const channels = fleet.devices.map((d) => ({
          id: d.id,
          ...Object.fromEntries(
            fleet
              .query<{ channel: string; n: number }>(
                d,
                "SELECT channel, count(*) AS n FROM invoice_status_ledger WHERE status = 'paid' GROUP BY channel",
              )
              .map((r) => [r.channel, r.n]),
          ),
        }));
        console.log(
          JSON.stringify(
            {
              channels,
              lb: [...fleet.lb.answered],
              published: fleet.published.length,
              sample: fleet.devices[0]!.svc.readSimLog().slice(0, 2),
              jammedLog: fleet.devices
                .find((d) => d.jammed)
                ?.svc.readSimLog()
                .slice(0, 2),
            },
            null,
            1,
          ),
        );
      }
    },
    TIMEOUT_MS * 3,
  );
});
