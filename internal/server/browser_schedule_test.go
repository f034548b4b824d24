package server_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
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
			chromedp.SetValue(chromedp.CSS(`[data-testid="schedule-kind"]`), kind),
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
	next := eval[[]string](t, tab, `[...`+cronCard+`.querySelectorAll('[data-testid="schedule-next"] li')].map(li => li.textContent)`)
	if len(next) != 3 {
		t.Fatalf("next slots %q, want 3", next)
	}
	for _, n := range next {
		if !strings.Contains(n, "09:00 CE") || strings.HasPrefix(n, "Sat") || strings.HasPrefix(n, "Sun") {
			t.Errorf("next slot %q: want a weekday at 09:00 Paris time", n)
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
