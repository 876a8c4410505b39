// The customer's screen. No framework and no build step: the Pi's browser loads this file as is.
// Every string that comes from the server or the settings (product names, references) reaches the
// DOM through textContent; the QR SVG is parsed and checked before it is inserted.

import { formatMoney, hasDictionary, loadDictionary, translate } from './text.js';

// Turnstile standing QR: replaced this long before expiry so nobody scans a code about to die.
const RENEW_BEFORE_MS = 10_000;
// The pay screen's line for each provider: which apps can pay its QR.
const PAY_APPS = {
  sandbox: 'payApps_sandbox',
  gerege: 'payApps_gerege',
  qutpay: 'payApps_qutpay',
};
const RECONNECT_MS = 2_000;
const ERROR_SCREEN_MIN_MS = 5_000;
// Phases whose screen the page leaves on its own after resultScreenSec, should no push arrive.
const RESULT_PHASES = new Set(['vended', 'refunded', 'failed', 'expired', 'canceled']);
const SCREENS = ['connecting', 'catalog', 'fare', 'creating', 'pay', 'progress', 'done', 'refund', 'operator', 'error'];

const view = {
  state: null,
  offsetMs: 0,
  chosenLang: null,
  connected: false,
  creating: false,
  created: null,
  error: null,
  renewing: false,
  renewedOrderId: null,
  dismissedOrderId: null,
  lastScreen: 'connecting',
  catalogKey: '',
  qrSource: '',
  receiptQrSource: '',
};

const $ = (id) => document.getElementById(id);
const serverNow = () => Date.now() + view.offsetMs;

function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

// ---------- language ----------

function language() {
  return view.chosenLang ?? view.state?.language ?? 'en';
}

function t(key, vars = {}) {
  return translate(language(), key, vars);
}

function useLanguage(lang) {
  loadDictionary(lang).then(render, () => setTimeout(() => useLanguage(lang), RECONNECT_MS));
}

const money = (amount, currency) => formatMoney(amount, currency, language());
// A product's name in the page's language where the catalog gives one, else its default name.
const productName = (item) => item?.names?.[language()] ?? item?.name ?? '';
const catalogItem = (slot) => view.state?.catalog.find((entry) => entry.slot === slot);

// ---------- talking to the server ----------

async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const data = await res.json().catch(() => null);
  if (!res.ok) throw Object.assign(new Error('api'), { status: res.status, code: data?.error?.code });
  return data;
}

function applyState(state, fromFetch) {
  // A fetched state may be older than one pushed meanwhile; the push stream itself is ordered.
  if (fromFetch && view.state && Date.parse(state.now) < Date.parse(view.state.now)) return;
  view.offsetMs = Date.parse(state.now) - Date.now();
  view.state = state;
  // Our new order is on the server's screen now (or a later one is): stop showing the local copy.
  if (view.created && state.order && state.order.orderId >= view.created.orderId) view.created = null;
  if (!view.chosenLang && !hasDictionary(state.language)) useLanguage(state.language);
  render();
}

function refreshState() {
  api('GET', '/api/state').then(
    (state) => applyState(state, true),
    () => {},
  );
}

function connect() {
  const events = new EventSource('/api/events');
  events.addEventListener('open', () => {
    view.connected = true;
    refreshState();
    render();
  });
  events.addEventListener('state', (event) => {
    view.connected = true;
    try {
      applyState(JSON.parse(event.data), false);
    } catch {
      refreshState();
    }
  });
  events.addEventListener('error', () => {
    view.connected = false;
    render();
    // EventSource retries network errors itself but gives up after an HTTP error; then start over.
    if (events.readyState === EventSource.CLOSED) {
      events.close();
      setTimeout(connect, RECONNECT_MS);
    }
  });
}

const ERROR_KEYS = {
  VG_ERR_DEVICE_BUSY: 'errorBusy',
  VG_ERR_UNKNOWN_SLOT: 'errorUnknownSlot',
  VG_ERR_BAD_REQUEST: 'errorUnknownSlot',
  // Sold out or jammed between the screen's last update and the tap: "choose another".
  VG_ERR_SOLD_OUT: 'errorUnknownSlot',
  VG_ERR_SLOT_JAMMED: 'errorUnknownSlot',
};

async function createOrder(slot) {
  if (view.creating) return;
  view.creating = true;
  view.error = null;
  render();
  try {
    const created = await api('POST', '/api/orders', slot === undefined ? {} : { slot });
    if (view.state?.order?.orderId !== created.orderId) view.created = { ...created, slot: slot ?? null };
  } catch (err) {
    view.error = { key: ERROR_KEYS[err.code] ?? 'errorUnavailable', retry: () => createOrder(slot), until: Date.now() + errorScreenMs() };
    refreshState();
  } finally {
    view.creating = false;
    render();
  }
}

async function cancelOrder(orderId) {
  try {
    // The local API takes only JSON for anything that changes state (src/kiosk/request-guard.ts).
    await api('POST', `/api/orders/${orderId}/cancel`, {});
    if (view.created?.orderId === orderId) view.created = null;
  } catch {
    // Most likely paid meanwhile: the state on the server says what to show.
  }
  refreshState();
}

async function renewStandingQr(orderId) {
  view.renewing = true;
  render();
  await cancelOrder(orderId);
  view.renewing = false;
  render();
}

function errorScreenMs() {
  return Math.max(ERROR_SCREEN_MIN_MS, (view.state?.resultScreenSec ?? 0) * 1000);
}

// ---------- deciding what to show ----------

function payModel() {
  const state = view.state;
  if (state.phase === 'awaiting_payment' && state.order) {
    const o = state.order;
    return {
      orderId: o.orderId,
      itemName: catalogItem(o.slot)?.names?.[language()] ?? o.itemName,
      amount: o.amount,
      currency: o.currency,
      provider: o.provider,
      expiresAt: o.expiresAt,
      qrSvg: state.qrSvg,
    };
  }
  const c = view.created;
  if (!c) return null;
  const item = catalogItem(c.slot);
  return {
    orderId: c.orderId,
    itemName: productName(item),
    amount: item?.price ?? state.fare ?? 0,
    currency: state.currency,
    provider: state.provider,
    expiresAt: c.expiresAt,
    qrSvg: c.qrSvg,
  };
}

function screenFor() {
  const state = view.state;
  if (!state) return 'connecting';
  if (view.error && Date.now() < view.error.until) return 'error';
  view.error = null;
  let phase = state.phase;
  if (RESULT_PHASES.has(phase) && serverNow() >= Date.parse(state.since) + state.resultScreenSec * 1000) phase = 'idle';
  if (phase === 'expired' || phase === 'canceled') phase = 'idle';
  if (phase === 'failed' && state.order && state.order.orderId === view.dismissedOrderId) phase = 'idle';
  if (view.renewing) return 'creating';
  if (phase === 'idle') {
    if (view.created && Date.parse(view.created.expiresAt) > serverNow()) return 'pay';
    view.created = null;
    if (view.creating) return 'creating';
    if (state.mode === 'turnstile') {
      if (state.autoStart && view.connected) {
        queueMicrotask(() => createOrder(undefined));
        return 'creating';
      }
      return 'fare';
    }
    return 'catalog';
  }
  switch (phase) {
    case 'creating':
      return 'creating';
    case 'awaiting_payment':
      return 'pay';
    case 'paid':
    case 'vending':
      return 'progress';
    case 'vended':
      return 'done';
    case 'vend_failed':
    case 'refunding':
    case 'refunded':
      return 'refund';
    case 'failed':
      return 'error';
    case 'vend_uncertain':
    case 'out_of_service':
    case 'offline':
      return 'operator';
    default:
      return 'connecting';
  }
}

// ---------- drawing ----------

function render() {
  const screen = screenFor();
  if (screen !== view.lastScreen) {
    // A customer's language choice lasts until their purchase is over (done, refunded, canceled, expired).
    const customerLeft =
      view.lastScreen === 'done' ||
      view.lastScreen === 'refund' ||
      (view.lastScreen === 'pay' && (screen === 'catalog' || screen === 'fare'));
    if (customerLeft) view.chosenLang = null;
    view.lastScreen = screen;
  }
  const lang = language();
  document.documentElement.lang = lang;
  document.body.dataset.screen = screen;
  document.body.dataset.phase = view.state?.phase ?? '';
  for (const name of SCREENS) $(`screen-${name}`).hidden = name !== screen;
  for (const el of document.querySelectorAll('[data-i18n]')) setText(el, t(el.dataset.i18n));
  for (const button of document.querySelectorAll('[data-lang]')) button.setAttribute('aria-pressed', String(button.dataset.lang === lang));
  $('banner').hidden = view.connected || !view.state;
  const state = view.state;
  if (!state) return;
  const turnstile = state.mode === 'turnstile';
  if (screen === 'catalog') drawCatalog(state);
  // Offline, a tap could only fail: the buttons wait for the connection to come back.
  for (const button of document.querySelectorAll('.product, #pay-to-enter')) button.disabled = !view.connected;
  if (screen === 'fare') setText($('fare-amount'), money(state.fare ?? 0, state.currency));
  if (screen === 'creating') setText($('creating-text'), t(view.renewing ? 'renewing' : 'preparing'));
  if (screen === 'pay') drawPay(state);
  if (screen === 'progress') setText($('progress-text'), t(turnstile ? 'openingGate' : 'dispensing'));
  if (screen === 'done') {
    setText($('done-text'), t(turnstile ? 'pleasePass' : 'takeItem'));
    drawReceipt(state);
  }
  if (screen === 'error') setText($('error-text'), t(view.error?.key ?? 'errorUnavailable'));
  $('error-retry').hidden = !view.error?.retry;
  // Every screen says which machine this is and whom to call.
  setText($('help-device'), t('deviceLabel', { id: state.deviceId }));
  setText($('help-contact'), state.supportContact ? t('supportLabel', { contact: state.supportContact }) : '');
  $('help-contact').hidden = !state.supportContact;
  if (screen === 'operator') {
    setText($('operator-device'), t('deviceLabel', { id: state.deviceId }));
    setText($('operator-order'), state.order ? t('orderLabel', { ref: state.order.reference }) : '');
  }
}

function drawCatalog(state) {
  const key = JSON.stringify([language(), hasDictionary(language()), state.currency, state.catalog, state.selection]);
  if (key === view.catalogKey) return;
  view.catalogKey = key;
  const list = $('catalog');
  // Sold-out and jammed slots are not offered: the API would refuse them anyway.
  const offered = state.catalog.filter((item) => item.available !== false);
  list.replaceChildren(
    ...offered.map((item) => {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'product';
      button.dataset.slot = item.slot;
      // An MDB machine in always idle names the item itself: the list shows prices, the machine takes the choice.
      if (state.selection === 'machine') button.disabled = true;
      const name = document.createElement('span');
      name.className = 'name';
      name.textContent = productName(item);
      const price = document.createElement('span');
      price.className = 'price';
      price.textContent = money(item.price, state.currency);
      const slot = document.createElement('span');
      slot.className = 'slot';
      slot.textContent = t('slotLabel', { slot: item.slot });
      button.append(name, price, slot);
      const entry = document.createElement('li');
      entry.append(button);
      return entry;
    }),
  );
  $('catalog-empty').hidden = offered.length > 0;
  $('choose-on-machine').hidden = state.selection !== 'machine';
}

function drawPay(state) {
  const pay = payModel();
  if (!pay) return;
  // A turnstile order's item is the service's own word for a pass; the customer reads it in their language.
  setText($('pay-item'), state.mode === 'turnstile' ? t('passTitle') : pay.itemName);
  setText($('pay-amount'), money(pay.amount, pay.currency));
  // Which apps can pay this QR: the operator's list, else the page's own line for the provider.
  setText(
    $('pay-apps'),
    state.paymentApps?.length ? t('payAppsList', { apps: state.paymentApps.join(', ') }) : t(PAY_APPS[pay.provider] ?? PAY_APPS.sandbox),
  );
  $('cancel').dataset.orderId = String(pay.orderId);
  $('cancel').hidden = state.mode === 'turnstile' && state.autoStart;
  drawQr(pay.qrSvg);
  drawAppLinks(state.phase === 'awaiting_payment' ? state.order?.appLinks : null);
  drawCountdown(state, pay);
}

// ---------- bank-app links (a customer holding a phone) ----------

/** Schemes never followed, whatever the server sent: they run code or read local data in the page. */
const NEVER_LINK_SCHEMES = ['javascript', 'data', 'vbscript', 'file', 'blob', 'about', 'http', 'ftp', 'ws', 'wss'];
/** The machine's own screen is no phone: the links are offered only on a phone-sized touch screen. */
const PHONE = window.matchMedia('(max-width: 600px) and (pointer: coarse), (max-width: 600px) and (hover: none)');

/** https, or an app scheme (the server sends only those the operator allows); no spaces, quotes or angle brackets. */
function isSafeAppLink(item) {
  if (!item || typeof item.name !== 'string' || typeof item.link !== 'string' || item.name.trim() === '') return false;
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(item.link);
  if (!scheme || NEVER_LINK_SCHEMES.includes(scheme[1].toLowerCase())) return false;
  return !/[\s<>"'`\\]/.test(item.link);
}

function drawAppLinks(links) {
  const box = $('app-links');
  const list = $('app-links-list');
  const safe = PHONE.matches && Array.isArray(links) ? links.filter(isSafeAppLink).slice(0, 16) : [];
  const key = JSON.stringify(safe);
  if (list.dataset.key === key) return;
  list.dataset.key = key;
  // Built from nodes with textContent and an href attribute: nothing the provider sent is parsed as HTML.
  list.replaceChildren(
    ...safe.map(({ name, link }) => {
      const a = document.createElement('a');
      a.href = link;
      a.rel = 'noopener noreferrer';
      a.textContent = name;
      const li = document.createElement('li');
      li.append(a);
      return li;
    }),
  );
  box.hidden = safe.length === 0;
}

function drawCountdown(state, pay) {
  const remainingMs = pay.expiresAt ? Date.parse(pay.expiresAt) - serverNow() : NaN;
  if (Number.isNaN(remainingMs)) return setText($('countdown'), '');
  const seconds = Math.max(0, Math.ceil(remainingMs / 1000));
  const time = `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`;
  setText($('countdown'), seconds > 0 ? t('timeLeft', { time }) : t('timeUp'));
  if (state.mode === 'turnstile' && state.autoStart && remainingMs <= RENEW_BEFORE_MS && view.renewedOrderId !== pay.orderId) {
    view.renewedOrderId = pay.orderId;
    renewStandingQr(pay.orderId);
  }
}

// The fiscal receipt of the vend: its QR when it came in time, else a line saying it follows.
function drawReceipt(state) {
  const receipt = state.receipt;
  $('receipt').hidden = !receipt;
  if (!receipt) return;
  const shown = receipt.status === 'issued' && Boolean(state.receiptQrSvg);
  $('receipt-qr').hidden = !shown;
  if (shown) drawQr(state.receiptQrSvg, 'receipt-qr', 'receiptQrSource');
  setText($('receipt-text'), shown ? t('receiptScan') : t(receipt.status === 'issued' ? 'receiptIssued' : 'receiptFollows'));
  $('receipt-lottery').hidden = !(shown && receipt.lottery);
  if (shown && receipt.lottery) setText($('receipt-lottery'), t('receiptLottery', { lottery: receipt.lottery }));
}

// The server renders the QR (qrcode); only an <svg> made of <path>s is accepted into the page.
function drawQr(svgText, target = 'qr', source = 'qrSource') {
  if (!svgText || svgText === view[source]) return;
  const doc = new DOMParser().parseFromString(svgText, 'image/svg+xml');
  const root = doc.documentElement;
  const allowed = new Set(['fill', 'stroke', 'd']);
  const safe =
    root.namespaceURI === 'http://www.w3.org/2000/svg' &&
    root.localName === 'svg' &&
    [...root.children].every(
      (el) => el.localName === 'path' && el.children.length === 0 && [...el.attributes].every((attr) => allowed.has(attr.name)),
    );
  if (!safe) return;
  root.setAttribute('aria-hidden', 'true');
  $(target).replaceChildren(document.importNode(root, true));
  view[source] = svgText;
}

// ---------- input ----------

function onTap(event) {
  const target = event.target.closest('button');
  if (!target || target.disabled) return;
  if (target.dataset.lang) {
    view.chosenLang = target.dataset.lang;
    useLanguage(target.dataset.lang);
    render();
  } else if (target.dataset.slot) {
    createOrder(target.dataset.slot);
  } else if (target.id === 'pay-to-enter') {
    createOrder(undefined);
  } else if (target.id === 'cancel') {
    cancelOrder(Number(target.dataset.orderId));
  } else if (target.id === 'error-retry') {
    const retry = view.error?.retry;
    view.error = null;
    if (retry) retry();
    else render();
  } else if (target.id === 'error-back') {
    if (!view.error && view.state?.phase === 'failed') view.dismissedOrderId = view.state.order?.orderId ?? null;
    view.error = null;
    render();
  }
}

document.addEventListener('click', onTap);
useLanguage('en');
connect();
// Countdown, result screens running out, error screens timing out.
setInterval(render, 250);

// A kiosk: no pinch or ctrl+wheel zoom, no two-finger gestures (the viewport meta and CSS do the
// rest; the kiosk unit also starts Chromium with --disable-pinch).
for (const type of ['gesturestart', 'gesturechange']) document.addEventListener(type, (event) => event.preventDefault());
document.addEventListener(
  'touchmove',
  (event) => {
    if (event.touches.length > 1) event.preventDefault();
  },
  { passive: false },
);
document.addEventListener(
  'wheel',
  (event) => {
    if (event.ctrlKey) event.preventDefault();
  },
  { passive: false },
);

// The technician's service menu: a 3-second press on the machine id in the footer (a customer taps
// or scrolls; nobody holds a footer line that long). The menu page asks for the PIN itself.
const SERVICE_HOLD_MS = 3_000;
let serviceHold = null;
const helpDevice = $('help-device');
helpDevice.addEventListener('pointerdown', () => {
  clearTimeout(serviceHold);
  serviceHold = setTimeout(() => location.assign('/service.html'), SERVICE_HOLD_MS);
});
for (const type of ['pointerup', 'pointerleave', 'pointercancel']) helpDevice.addEventListener(type, () => clearTimeout(serviceHold));
helpDevice.addEventListener('contextmenu', (event) => event.preventDefault());
