// The schedules page (web/schedule.templ): create, enable/disable and
// delete through create_schedule, update_schedule and delete_schedule.
// The picker ("every weekday at 09:00") writes the RRULE the server
// takes (web/schedule.go RuleWords says it back in words); slots are
// shown in the reader's time zone; the list is rendered again when a
// turn starts or ends, so a run shows live.
import { refresh, showError } from './manage.js';
import { dateLocale } from './locale.js';

const WEEKDAYS = 'MO,TU,WE,TH,FR';

// ruleOf is the rule the picker's fields make: {rrule} or {cron}.
export function ruleOf(f) {
  const repeat = f.repeat.value;
  if (repeat === 'rrule' || repeat === 'cron') return { [repeat]: f.rule.value.trim() };
  // BYSECOND=0: a slot is on the minute (RFC 5545 takes unsaid seconds
  // from DTSTART, the instant the schedule was made).
  if (repeat === 'hourly') return { rrule: 'FREQ=HOURLY;BYMINUTE=0;BYSECOND=0' };
  if (repeat === 'minutes') {
    const n = Number(f.every.value);
    const ms = [];
    for (let m = 0; m < 60; m += n) ms.push(m);
    return { rrule: `FREQ=HOURLY;BYMINUTE=${ms.join(',')};BYSECOND=0` };
  }
  const [h, m] = (f.time.value || '09:00').split(':').map(Number);
  const at = `BYHOUR=${h};BYMINUTE=${m};BYSECOND=0`;
  if (repeat === 'daily') return { rrule: `FREQ=DAILY;${at}` };
  const days = repeat === 'weekdays' ? WEEKDAYS : f.day.value;
  return { rrule: `FREQ=WEEKLY;BYDAY=${days};${at}` };
}

// localTimes writes every slot under root in the reader's time zone (the
// server wrote them in the schedule's, kept as the title).
function localTimes(root) {
  const fmt = new Intl.DateTimeFormat(dateLocale(), {
    weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit', hourCycle: 'h23', timeZoneName: 'short',
  });
  for (const t of root.querySelectorAll('time[datetime]')) {
    const d = new Date(t.dateTime);
    if (!Number.isNaN(d.getTime())) t.textContent = fmt.format(d);
  }
}

export class Schedules {
  constructor(doc, conn) {
    this.doc = doc;
    this.conn = conn;
    this.form = doc.getElementById('schedule-form');
    this.error = doc.querySelector('[data-testid="schedule-error"]');
    this.timer = 0;
    const tz = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (tz && this.form.timezone.value === 'UTC') this.form.timezone.value = tz;
    this.form.repeat.addEventListener('change', () => this.onRepeat());
    this.form.addEventListener('submit', (e) => { e.preventDefault(); this.create(); });
    doc.addEventListener('click', (e) => this.onClick(e));
    this.onRepeat();
    localTimes(doc.getElementById('schedule-list'));
  }

  // onOpen subscribes to the caller's agent stream on every (re)connect:
  // a turn's start and end render the list again.
  onOpen() {
    this.conn.subscribe({ stream: 'agent' }, (f) => {
      const ev = f.type === 'event' && f.event?.type === 'agent' ? f.event.event : null;
      if (f.type === 'resync' || ev?.type === 'turn_started' || ev?.type === 'turn_ended') this.soon();
    }).catch(() => {});
  }

  // soon renders the list again once a burst of events is over.
  soon() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.reload().catch(() => {}), 150);
  }

  async reload() {
    await refresh('schedule-list');
    localTimes(this.doc.getElementById('schedule-list'));
  }

  onRepeat() {
    const repeat = this.form.repeat.value;
    for (const el of this.form.querySelectorAll('[data-picker]')) {
      const on = el.dataset.picker.split(' ').includes(repeat);
      el.hidden = !on;
      for (const c of el.querySelectorAll('input, select')) c.disabled = !on;
    }
    for (const hint of this.form.querySelectorAll('[data-hint]')) hint.hidden = hint.dataset.hint !== repeat;
    if (repeat === 'cron' || repeat === 'rrule') {
      this.form.rule.value = repeat === 'cron' ? '0 9 * * 1-5' : 'FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=9;BYMINUTE=0';
    }
  }

  async create() {
    const f = this.form;
    const fields = { prompt: f.prompt.value, timezone: f.timezone.value.trim(), missed: f.missed.value, ...ruleOf(f) };
    if (f.agent.value) fields.agent = f.agent.value;
    if (f.conversation_id.value.trim()) fields.conversation_id = f.conversation_id.value.trim();
    const button = f.querySelector('[type="submit"]');
    button.disabled = true;
    try {
      await this.conn.request('create_schedule', fields, { retry: false });
      showError(this.error, null);
      f.prompt.value = '';
      await this.reload();
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
      await this.reload();
    } catch (err) {
      button.disabled = false;
      showError(this.error, err);
    }
  }
}
