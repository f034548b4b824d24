// Approval controls on a tool card whose call waits for a person
// (DESIGN.md §10.2): Approve, Deny with an optional reason, and an editor
// for the arguments. Every open tab shows them; the decision, made in any
// tab (or over the API), removes them everywhere.
import { h, prettyJSON } from './dom.js';

const WAITING = 'Waiting for your approval';

// showApproval adds the controls to card; decide(body) sends the decision.
export function showApproval(card, { callId, args }, decide) {
  if (!card || card.querySelector('.approval')) return;
  card.dataset.waiting = 'true';
  const editor = h('textarea', { class: 'approval-args', rows: 4, 'aria-label': 'Arguments', 'data-testid': 'approval-arguments' });
  editor.value = prettyJSON(args || '{}');
  const reason = h('input', { type: 'text', class: 'approval-reason', placeholder: 'Reason (optional)', 'aria-label': 'Reason', 'data-testid': 'approval-reason' });
  const approve = h('button', { type: 'button', class: 'btn btn-primary', 'data-testid': 'approve' }, 'Approve');
  const deny = h('button', { type: 'button', class: 'btn', 'data-testid': 'deny' }, 'Deny');
  const box = h('div', { class: 'approval', 'data-testid': 'approval' },
    h('div', { class: 'approval-title' }, 'Check the arguments, then approve or deny this call'),
    editor, reason, h('div', { class: 'approval-actions' }, deny, approve));
  // The card says it waits for the person, and shows the arguments once:
  // in the editor, while the decision is open.
  const status = card.querySelector('.tool-status');
  if (status) {
    status.dataset.label = status.textContent;
    status.textContent = WAITING;
    status.classList.add('tool-waiting');
  }
  const argsSection = card.querySelector('[data-testid="tool-arguments"]')?.closest('.tool-section');
  if (argsSection) argsSection.hidden = true;
  const send = async (decision) => {
    approve.disabled = deny.disabled = true;
    const body = { call_id: callId, decision };
    if (decision === 'approve' && editor.value.trim() !== prettyJSON(args || '{}').trim()) {
      try { body.arguments = JSON.parse(editor.value); } catch { approve.disabled = deny.disabled = false; editor.setCustomValidity('not JSON'); editor.reportValidity(); return; }
    }
    if (decision === 'deny' && reason.value.trim()) body.reason = reason.value.trim();
    try { await decide(body); } finally { approve.disabled = deny.disabled = false; }
  };
  approve.addEventListener('click', () => send('approve'));
  deny.addEventListener('click', () => send('deny'));
  editor.addEventListener('input', () => editor.setCustomValidity(''));
  const d = card.querySelector('.tool-details');
  if (d) d.open = true;
  (d || card).append(box);
}

// decided removes the controls and says what was decided.
export function decided(card, { decision, reason }) {
  if (!card) return;
  card.querySelector('.approval')?.remove();
  const status = card.querySelector('.tool-status.tool-waiting');
  if (status) {
    status.textContent = status.dataset.label || '';
    status.classList.remove('tool-waiting');
  }
  const argsSection = card.querySelector('[data-testid="tool-arguments"]')?.closest('.tool-section');
  if (argsSection) argsSection.hidden = false;
  delete card.dataset.waiting;
  card.dataset.decision = decision;
  const note = h('div', { class: 'approval-note', 'data-testid': 'approval-decision' },
    decision === 'approve' ? 'Approved' : `Denied${reason ? `: ${reason}` : ''}`);
  (card.querySelector('.tool-details') || card).append(note);
}
