// The technician's service menu on the kiosk screen. The session token lives in this page's memory
// only: a reload, Exit or a few idle minutes end it and the PIN is asked again. Every string from
// the server reaches the DOM through textContent. Nothing here moves money: refunds and resolves
// stay signed commands or the CLI.

import { formatMoney } from './text.js';

const PIN_MAX = 12;
const $ = (id) => document.getElementById(id);
let token = null;
let pin = '';
let idleMs = 180_000;
let idleTimer = null;

function show(section) {
  for (const id of ['off', 'pin', 'menu']) $(id).hidden = id !== section;
}

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

/** Back to the customer's screen after a few idle minutes: a technician who walks away leaves nothing open. */
function touched() {
  clearTimeout(idleTimer);
  idleTimer = setTimeout(exit, idleMs);
}

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: {
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const data = await response.json().catch(() => ({}));
  if (response.status === 401 && token) {
    token = null;
    askPin('The session ended: enter the PIN again.');
    throw new Error('session ended');
  }
  if (!response.ok) throw new Error(data.error?.message ?? `HTTP ${response.status}`);
  return data;
}

function askPin(message = '') {
  pin = '';
  $('pin-dots').textContent = '';
  $('pin-error').textContent = message;
  show('pin');
}

function buildKeypad() {
  for (const key of ['1', '2', '3', '4', '5', '6', '7', '8', '9', 'Clear', '0', 'OK']) {
    const button = element('button', key, key === 'OK' ? 'primary' : 'secondary');
    button.type = 'button';
    button.dataset.key = key;
    $('keypad').append(button);
  }
  $('keypad').addEventListener('click', async (event) => {
    const key = event.target.closest('button')?.dataset.key;
    if (!key) return;
    if (key === 'Clear') pin = '';
    else if (key !== 'OK') pin = (pin + key).slice(0, PIN_MAX);
    $('pin-dots').textContent = '•'.repeat(pin.length);
    if (key !== 'OK') return;
    try {
      const session = await api('POST', '/api/service/login', { pin });
      token = session.token;
      await refresh();
      show('menu');
    } catch (err) {
      askPin(err.message);
    }
  });
}

function renderSlots(slots) {
  const body = $('slots');
  body.replaceChildren();
  for (const slot of slots) {
    const row = element('tr');
    row.dataset.slot = slot.slot;
    row.append(element('td', slot.slot), element('td', slot.name));
    row.append(element('td', slot.stock === null ? 'not counted' : `${slot.stock} in stock`, 'stock'));
    const input = element('input');
    input.type = 'number';
    input.min = '0';
    input.max = '10000';
    input.value = String(slot.stock ?? 0);
    const refill = element('button', 'Refill', 'primary');
    refill.dataset.action = 'refill';
    const cells = [element('td'), element('td')];
    cells[0].append(input);
    cells[1].append(refill);
    if (slot.jammed) {
      const clear = element('button', `Clear jam (${slot.jamReason ?? 'jammed'})`, 'secondary');
      clear.dataset.action = 'clear-jam';
      cells[1].append(clear);
    }
    row.append(...cells);
    body.append(row);
  }
}

function fillList(id, items, line, empty) {
  const list = $(id);
  list.replaceChildren(...(items.length ? items.map(line) : [element('li', empty)]));
}

async function refresh() {
  const view = await api('GET', '/api/service/overview');
  const { identity } = view;
  $('identity').textContent =
    `Device ${identity.deviceId} · release ${identity.release} · provider ${identity.provider}${identity.livemode ? ' (live)' : ' (test)'} · database ${identity.database}`;
  renderSlots(view.slots);
  fillList(
    'alarms',
    view.alarms,
    (a) => element('li', `${a.severity.toUpperCase()} ${a.name}: ${a.message} (since ${a.raisedAt})`),
    'none',
  );
  fillList(
    'orders',
    view.orders,
    (o) => element('li', `#${o.orderId} ${o.reference} ${o.slot ?? ''} ${o.amount} — ${o.state} (${o.createdAt})`),
    'none yet',
  );
  const sales = view.sales;
  $('sales').textContent = sales
    ? `paid ${sales.paid.count} (${formatMoney(sales.paid.amount, sales.currency)}), vended ${sales.vended.count}, refunded ${sales.refunded.count}`
    : 'not available';
}

async function runSelftest() {
  const list = $('selftest');
  list.replaceChildren(element('li', 'running…'));
  try {
    const report = await api('POST', '/api/service/selftest', {});
    fillList(
      'selftest',
      report.checks,
      (c) => element('li', `${c.status} ${c.name}: ${c.detail}${c.hint ? ` — ${c.hint}` : ''}`, `status-${c.status}`),
      '',
    );
  } catch (err) {
    list.replaceChildren(element('li', err.message, 'warn-text'));
  }
}

async function onMenuClick(event) {
  const button = event.target.closest('button');
  const action = button?.dataset.action;
  if (button?.id === 'run-selftest') return runSelftest();
  if (!action) return;
  const row = button.closest('tr');
  const slot = row.dataset.slot;
  $('menu-error').textContent = '';
  try {
    if (action === 'refill')
      await api('POST', `/api/service/slots/${encodeURIComponent(slot)}/refill`, { count: Number(row.querySelector('input').value) });
    else await api('POST', `/api/service/slots/${encodeURIComponent(slot)}/clear-jam`, {});
    await refresh();
  } catch (err) {
    $('menu-error').textContent = `${slot}: ${err.message}`;
  }
}

async function exit() {
  if (token) await api('POST', '/api/service/logout', {}).catch(() => {});
  token = null;
  location.assign('/');
}

async function start() {
  const status = await api('GET', '/api/service/status');
  idleMs = status.idleSec * 1000;
  touched();
  if (!status.enabled) {
    $('off-text').textContent = status.message;
    show('off');
    return;
  }
  askPin();
}

buildKeypad();
$('menu').addEventListener('click', (event) => void onMenuClick(event));
$('exit').addEventListener('click', () => void exit());
document.addEventListener('pointerdown', touched);
void start();
