// The schedules page (web/schedule.templ): create, enable/disable and
// delete through create_schedule, update_schedule and delete_schedule.
import { refresh, showError } from './manage.js';

export class Schedules {
  constructor(doc, conn) {
    this.conn = conn;
    this.form = doc.getElementById('schedule-form');
    this.error = doc.querySelector('[data-testid="schedule-error"]');
    const tz = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (tz && this.form.timezone.value === 'UTC') this.form.timezone.value = tz;
    this.form.kind.addEventListener('change', () => this.onKind());
    this.form.addEventListener('submit', (e) => { e.preventDefault(); this.create(); });
    doc.addEventListener('click', (e) => this.onClick(e));
  }

  onKind() {
    const kind = this.form.kind.value;
    for (const hint of this.form.querySelectorAll('[data-hint]')) hint.hidden = hint.dataset.hint !== kind;
    this.form.rule.value = kind === 'cron' ? '0 9 * * 1-5' : 'FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=9;BYMINUTE=0';
  }

  async create() {
    const f = this.form;
    const fields = { prompt: f.prompt.value, timezone: f.timezone.value.trim(), missed: f.missed.value };
    fields[f.kind.value] = f.rule.value.trim();
    if (f.agent.value) fields.agent = f.agent.value;
    if (f.conversation_id.value.trim()) fields.conversation_id = f.conversation_id.value.trim();
    const button = f.querySelector('[type="submit"]');
    button.disabled = true;
    try {
      await this.conn.request('create_schedule', fields, { retry: false });
      showError(this.error, null);
      f.prompt.value = '';
      await refresh('schedule-list');
    } catch (err) {
      showError(this.error, err);
    } finally {
      button.disabled = false;
    }
  }

  async onClick(e) {
    const button = e.target.closest('[data-action]');
    const card = button?.closest('[data-schedule]');
    if (!card) return;
    const id = card.dataset.schedule;
    button.disabled = true;
    try {
      if (button.dataset.action === 'toggle') {
        await this.conn.request('update_schedule', { schedule_id: id, enabled: card.dataset.enabled !== 'true' }, { retry: false });
      } else if (button.dataset.action === 'delete') {
        await this.conn.request('delete_schedule', { schedule_id: id }, { retry: false });
      }
      showError(this.error, null);
      await refresh('schedule-list');
    } catch (err) {
      button.disabled = false;
      showError(this.error, err);
    }
  }
}
