package server_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/protocol"
)

// The schedules page in Chromium: a schedule's run is one click from its
// conversation; the form shows the server's bad_request naming the field
// for a bad RRULE and a bad time zone; a cron schedule in a time zone
// shows its next three slots; disable and delete.
func TestBrowserSchedules(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	ts := newTestServer(t)
	w := dialWS(t, ts)
	defer w.close()
	sub := w.subscribe(map[string]any{"stream": "all"})
	// DTSTART is now: the first of two hourly slots is due at once.
	var sc agent.Schedule
	w.ok(protocol.OpCreateSchedule, map[string]any{"prompt": "Report on the open issues", "rrule": "FREQ=HOURLY;COUNT=2"}, &sc)
	w.collect(sub.Sub, endCount(1))

	tab := browserTab(t, ts)
	do(t, tab, chromedp.Navigate(ts.URL+"/schedules"))
	waitJS(t, tab, "page online", `document.body.dataset.ready === 'true' && document.body.dataset.conn === 'online'`)
	card := `document.querySelector('[data-schedule="` + sc.ID + `"]')`
	waitJS(t, tab, "the run's link", card+`.querySelector('[data-testid="run-link"]') !== null`)
	if got := eval[int](t, tab, card+`.querySelectorAll('[data-testid="schedule-next"] li').length`); got != 1 {
		t.Errorf("next slots of COUNT=2 after its first run: %d, want 1", got)
	}

	fill := func(kind, rule, tz string) {
		t.Helper()
		do(t, tab,
			chromedp.SetValue(chromedp.CSS(`[data-testid="schedule-prompt"]`), "Summarize my open issues"),
			chromedp.SetValue(chromedp.CSS(`[data-testid="schedule-repeat"]`), kind),
			chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="schedule-repeat"]').dispatchEvent(new Event('change'))`),
			chromedp.SetValue(chromedp.CSS(`[data-testid="schedule-rule"]`), rule),
			chromedp.SetValue(chromedp.CSS(`[data-testid="schedule-timezone"]`), tz),
			chromedp.Click(chromedp.CSS(`[data-testid="schedule-create"]`)),
		)
	}
	errText := `document.querySelector('[data-testid="schedule-error"]')`
	fill("rrule", "FREQ=SOMETIMES", "UTC")
	waitJS(t, tab, "the rrule error", `!`+errText+`.hidden && `+errText+`.textContent.startsWith('rrule "FREQ=SOMETIMES" does not parse')`)
	fill("rrule", "FREQ=DAILY;BYHOUR=9", "Mars/Olympus")
	waitJS(t, tab, "the timezone error", errText+`.textContent.startsWith('timezone "Mars/Olympus" is not an IANA time zone')`)
	if n := eval[int](t, tab, `document.querySelectorAll('[data-testid="schedule"]').length`); n != 1 {
		t.Fatalf("%d schedules after two refused creates, want 1", n)
	}

	fill("cron", "0 9 * * 1-5", "Europe/Paris")
	waitJS(t, tab, "the cron schedule", `document.querySelectorAll('[data-testid="schedule"]').length === 2 && `+errText+`.hidden`)
	var list struct{ Schedules []agent.Schedule }
	w.ok(protocol.OpListSchedules, nil, &list)
	var cron agent.Schedule
	for _, s := range list.Schedules {
		if s.Cron != "" {
			cron = s
		}
	}
	if cron.Cron != "0 9 * * 1-5" || cron.Timezone != "Europe/Paris" || cron.Prompt != "Summarize my open issues" {
		t.Fatalf("stored %+v", cron)
	}
	cronCard := `document.querySelector('[data-schedule="` + cron.ID + `"]')`
	next := eval[[]string](t, tab, `[...`+cronCard+`.querySelectorAll('[data-testid="schedule-next"] time')].map(t => t.title)`)
	if len(next) != 3 {
		t.Fatalf("next slots %q, want 3", next)
	}
	for _, n := range next {
		if !strings.Contains(n, "09:00 CE") || strings.HasPrefix(n, "Sat") || strings.HasPrefix(n, "Sun") {
			t.Errorf("next slot %q: want a weekday at 09:00 Paris time in its title", n)
		}
	}
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.getElementById('schedule-list').scrollIntoView()`))
	screenshot(t, tab, "schedules.png")

	do(t, tab, chromedp.Click(chromedp.CSS(`[data-schedule="`+cron.ID+`"] [data-action="toggle"]`)))
	waitJS(t, tab, "disabled", cronCard+`?.dataset.enabled === 'false' && `+cronCard+`.querySelector('[data-testid="schedule-next"]').textContent.trim() === 'none'`)
	do(t, tab, chromedp.Click(chromedp.CSS(`[data-schedule="`+cron.ID+`"] [data-action="delete"]`)))
	waitJS(t, tab, "deleted", cronCard+` === null`)
	w.fail(protocol.OpGetSchedule, map[string]any{"schedule_id": cron.ID}, agent.CodeNotFound)

	do(t, tab, chromedp.Click(chromedp.CSS(`[data-schedule="`+sc.ID+`"] [data-testid="run-link"]`)))
	waitConnected(t, tab)
	waitJS(t, tab, "the run's answer", jsAnswers+`.length === 1`)
	if got := answerText(t, tab, 0); got != "You said: Report on the open issues" {
		t.Fatalf("the run's conversation answers %q", got)
	}
}

// timezone runs the tab in the IANA zone tz.
func timezone(tz string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: tz})
		return err
	})
}

// The picker in Chromium, for a reader in New York on Wednesday 4 March
// 2026 at 10:30: "every weekday at 09:00" (the form's defaults) makes
// the RRULE of weekdays at 9:00 in the reader's zone, the card says it in
// words, and its next three slots are Thursday, Friday and Monday at 9:00
// New York time (Monday after the switch to summer time: 13:00 UTC, not
// 14:00). "every 15 minutes" says itself back too. Then a run's turn
// shows on the page while it runs and once it ends, without a reload, and
// its chat's header says it is a scheduled run.
func TestBrowserSchedulePicker(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	clock := &backClock{}
	clock.set(time.Since(time.Date(2026, 3, 4, 15, 30, 0, 0, time.UTC)))
	ts := newTestServer(t, withClock(clock))
	w := dialWS(t, ts)
	defer w.close()

	tab := browserTab(t, ts)
	do(t, tab, timezone("America/New_York"), chromedp.Navigate(ts.URL+"/schedules"))
	waitJS(t, tab, "page online", `document.body.dataset.ready === 'true' && document.body.dataset.conn === 'online'`)
	if tz := eval[string](t, tab, `document.querySelector('[data-testid="schedule-timezone"]').value`); tz != "America/New_York" {
		t.Fatalf("the form's time zone %q, want the browser's", tz)
	}
	do(t, tab,
		chromedp.SetValue(chromedp.CSS(`[data-testid="schedule-prompt"]`), "Plan my day"),
		chromedp.Click(chromedp.CSS(`[data-testid="schedule-create"]`)),
	)
	waitJS(t, tab, "the weekday schedule", `document.querySelectorAll('[data-testid="schedule"]').length === 1`)
	var list struct{ Schedules []agent.Schedule }
	w.ok(protocol.OpListSchedules, nil, &list)
	if len(list.Schedules) != 1 || !strings.HasSuffix(list.Schedules[0].RRule, "\nRRULE:FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=9;BYMINUTE=0;BYSECOND=0") || list.Schedules[0].Timezone != "America/New_York" {
		t.Fatalf("stored %+v", list.Schedules)
	}
	weekday := `document.querySelector('[data-schedule="` + list.Schedules[0].ID + `"]')`
	if got := eval[string](t, tab, weekday+`.querySelector('[data-testid="schedule-words"]').textContent.trim()`); !strings.HasPrefix(got, "every weekday at 09:00 (America/New_York)") {
		t.Errorf("the rule in words: %q", got)
	}
	type slot struct{ At, Text string }
	slots := eval[[]slot](t, tab, `[...`+weekday+`.querySelectorAll('[data-testid="schedule-next"] time')].map(t => ({at: t.dateTime, text: t.textContent}))`)
	want := []string{"2026-03-05T14:00:00Z", "2026-03-06T14:00:00Z", "2026-03-09T13:00:00Z"}
	var got []string
	for i, s := range slots {
		got = append(got, s.At)
		if i < len(want) && (!strings.Contains(s.Text, "09:00") || !strings.HasPrefix(s.Text, []string{"Thu", "Fri", "Mon"}[i])) {
			t.Errorf("slot %d reads %q: want its day at 09:00 in New York", i, s.Text)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("next slots %q, want %q", got, want)
	}

	do(t, tab,
		chromedp.SetValue(chromedp.CSS(`[data-testid="schedule-prompt"]`), "Check the queue"),
		chromedp.SetValue(chromedp.CSS(`[data-testid="schedule-repeat"]`), "minutes"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="schedule-repeat"]').dispatchEvent(new Event('change'))`),
		chromedp.SetValue(chromedp.CSS(`[data-testid="schedule-every"]`), "15"),
		chromedp.Click(chromedp.CSS(`[data-testid="schedule-create"]`)),
	)
	waitJS(t, tab, "every 15 minutes", `[...document.querySelectorAll('[data-testid="schedule-words"]')].some(d => d.textContent.trim().startsWith('every 15 minutes'))`)
	screenshot(t, tab, "schedule-picker.png")

	// A run: DTSTART is now, so the first of two hourly slots is due at
	// once; its answer waits until hold closes.
	hold := make(chan struct{})
	ts.Fake.Enqueue(llmtest.Reply{Text: "Here is the report", Hold: hold})
	var sc agent.Schedule
	w.ok(protocol.OpCreateSchedule, map[string]any{"prompt": "Report on the open issues", "rrule": "FREQ=HOURLY;COUNT=2"}, &sc)
	card := `document.querySelector('[data-schedule="` + sc.ID + `"]')`
	state := card + `?.querySelector('[data-testid="run-state"]')?.textContent`
	waitJS(t, tab, "the run running, live", state+` === 'running'`)
	close(hold)
	waitJS(t, tab, "the run done, live", state+` === 'done'`)
	// Its rule's zone is UTC; the reader's is New York.
	if got := eval[string](t, tab, card+`.querySelector('[data-testid="schedule-next"] time').textContent`); !strings.Contains(got, "11:30") {
		t.Errorf("the run's next slot (16:30 UTC) reads %q: want 11:30 New York time", got)
	}

	do(t, tab, chromedp.Click(chromedp.CSS(`[data-schedule="`+sc.ID+`"] [data-testid="run-link"]`)))
	waitConnected(t, tab)
	waitJS(t, tab, "the run's answer", jsAnswers+`.length === 1`)
	if got := eval[string](t, tab, `document.querySelector('[data-testid="schedule-badge"]')?.textContent || ''`); got != "Scheduled run" {
		t.Errorf("the run's chat header: %q, want the Scheduled run badge", got)
	}
}
