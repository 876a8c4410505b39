// Demo bank: the Pay button of the sandbox pay page. Messages go in through textContent.
const button = document.getElementById('pay');
const status = document.getElementById('status');
const message = document.getElementById('message');

async function pay() {
  button.disabled = true;
  message.textContent = 'Paying…';
  try {
    const res = await fetch(`/sandbox/pay/${encodeURIComponent(button.dataset.invoiceId)}`, { method: 'POST' });
    if (res.status === 204) {
      status.textContent = 'paid';
      status.dataset.status = 'paid';
      message.textContent = 'Paid';
      button.hidden = true;
      return;
    }
    const body = await res.json().catch(() => null);
    message.textContent = body?.error?.message ?? `payment refused (${res.status})`;
  } catch {
    message.textContent = 'no connection to the sandbox; try again';
  }
  button.disabled = false;
}

if (button) button.addEventListener('click', pay);
