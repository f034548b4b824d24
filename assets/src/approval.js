// Approval controls on a tool card whose call waits for a person
// (DESIGN.md §10.2): Approve, Deny with an optional reason, and an editor
// for the arguments. Every open tab shows them; the decision, made in any
// tab (or over the API), removes them everywhere.
import { h } from './dom.js';

// showApproval adds the controls to card; decide(body) sends the decision.
export function showApproval(card, { callId, args }, decide) {
  if (!card || card.querySelector('.approval')) return;
  card.dataset.waiting = 'true';
  const editor = h('textarea', { class: 'approval-args', rows: 3, 'aria-label': 'Arguments', 'data-testid': 'approval-arguments' });
  editor.value = args || '{}';
  const reason = h('input', { type: 'text', class: 'approval-reason', placeholder: 'Reason (optional)', 'aria-label': 'Reason', 'data-testid': 'approval-reason' });
  const approve = h('button', { type: 'button', class: 'btn btn-primary', 'data-testid': 'approve' }, 'Approve');
  const deny = h('button', { type: 'button', class: 'btn', 'data-testid': 'deny' }, 'Deny');
  const box = h('div', { class: 'approval', 'data-testid': 'approval' },
    h('div', { class: 'approval-title' }, 'This tool call waits for your approval'),
    editor, reason, h('div', { class: 'approval-actions' }, deny, approve));
  const send = async (decision) => {
    approve.disabled = deny.disabled = true;
    const body = { call_id: callId, decision };
    if (decision === 'approve' && editor.value.trim() !== (args || '{}').trim()) {
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
  delete card.dataset.waiting;
  card.dataset.decision = decision;
  const note = h('div', { class: 'approval-note', 'data-testid': 'approval-decision' },
    decision === 'approve' ? 'Approved' : `Denied${reason ? `: ${reason}` : ''}`);
  (card.querySelector('.tool-details') || card).append(note);
}
