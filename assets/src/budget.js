// The line above the composer that says what is left of the reader's
// token budget once little is (web/conversation.templ BudgetLine; the
// share is web.BudgetLowPercent, from the rules). It is filled from the
// page's boot and again after each turn (get_usage), its reset in the
// reader's time.
import { budgetLowPercent, localInstants } from './rules.js';

// showBudget fills main's line from b ({tokens, used, limit, resets_at});
// none hides it.
export function showBudget(main, b) {
  const el = main?.querySelector('#budget-note');
  if (!el) return;
  const left = b ? Math.max(b.tokens - b.used, 0) : 0;
  el.hidden = !b || !(left * 100 < b.tokens * budgetLowPercent());
  if (!b) return;
  el.querySelector('.budget-left').textContent = left.toLocaleString('en-US');
  el.querySelector('.budget-limit').textContent = b.limit;
  const t = el.querySelector('time');
  const at = new Date(b.resets_at);
  if (Number.isNaN(at.getTime())) return;
  t.dateTime = at.toISOString();
  t.textContent = localInstants(at.toISOString().replace('.000Z', 'Z'));
}

// refreshBudget reads the reader's budget again and shows it.
export async function refreshBudget(conn, main, boot) {
  if (!boot?.budget) return;
  const rep = await conn.request('get_usage', { user: boot.budget.user });
  showBudget(main, rep.budget || null);
}
