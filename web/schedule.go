package web

import (
	"strconv"
	"strings"
)

// SchedulesPage lists the caller's schedules (an admin's: everyone's) with
// their next slots and latest runs, and the form that makes one.
type SchedulesPage struct {
	Admin     bool
	Schedules []ScheduleRow
	Agents    []AgentOption // those the caller may schedule
	// EveryMinutes are the "every N minutes" the picker offers: the
	// divisors of an hour no shorter than the server's minimum interval
	// (AGENTIK_SCHEDULE_MIN_INTERVAL); Hourly: "every hour" is allowed.
	EveryMinutes []int
	Hourly       bool
}

// AgentOption is one agent a schedule may run on.
type AgentOption struct {
	Slug, Name string
}

// ScheduleRow is one schedule as the page shows it; times are written in
// the schedule's time zone (the script rewrites slots in the reader's).
type ScheduleRow struct {
	ID             string
	Owner          string // shown to admins
	Agent          string // its name; "" for the default
	Prompt         string
	Kind           string // "rrule" or "cron"
	Rule           string // the RRULE line or the cron expression
	FullRule       string // with the DTSTART line
	Words          string // the rule in words when the picker could have made it ("every weekday at 09:00"); "" otherwise
	Timezone       string
	Missed         string // "skip" or "once"
	Enabled        bool
	ConversationID string // every run's conversation; "" for a new one per run
	Next           []Slot
	Runs           []RunRow // the latest first
	MoreRuns       int      // runs older than those shown
}

// Slot is one instant the page shows: At (RFC 3339, UTC) for the script,
// Text in the schedule's time zone for a page without it.
type Slot struct {
	At, Text string
}

// RunRow is one run of a schedule.
type RunRow struct {
	Slot           Slot
	Outcome        string // claimed, started, queued, failed
	Running        bool   // its turn is running now
	Error          string
	ConversationID string
}

// State is what the page says of a run: running, done, queued, failed or
// claimed.
func (r RunRow) State() string {
	switch {
	case r.Running:
		return "running"
	case r.Outcome == "started":
		return "done"
	}
	return r.Outcome
}

// ScheduleRuns is how many of a schedule's latest runs the page shows.
const ScheduleRuns = 5

// PickerMinutes are the "every N minutes" a picker may offer: the
// divisors of an hour, so that an hourly RRULE lists their minutes.
var PickerMinutes = []int{1, 2, 5, 10, 15, 20, 30}

func boolAttr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func missedText(m string) string {
	if m == "skip" {
		return "skipped"
	}
	return "the latest runs once"
}

// weekdays are RRULE's days in the picker's order, with their names.
var weekdays = []struct{ Code, Name string }{
	{"MO", "Monday"}, {"TU", "Tuesday"}, {"WE", "Wednesday"}, {"TH", "Thursday"},
	{"FR", "Friday"}, {"SA", "Saturday"}, {"SU", "Sunday"},
}

// RuleWords says an RRULE line (without DTSTART) in words when it is one
// the schedules page's picker makes (assets/src/schedules.js ruleOf):
// "every day at 09:00", "every weekday at 09:00", "every Monday at
// 09:00", "every hour", "every 15 minutes" (each with BYSECOND=0); ""
// for any other rule.
func RuleWords(rule string) string {
	parts := map[string]string{}
	for _, kv := range strings.Split(strings.TrimPrefix(strings.TrimSpace(rule), "RRULE:"), ";") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return ""
		}
		parts[strings.ToUpper(k)] = strings.ToUpper(v)
	}
	if parts["BYSECOND"] != "0" {
		return "" // the picker's slots are on the minute
	}
	delete(parts, "BYSECOND")
	// at is " at HH:MM" of a rule of n parts with BYHOUR and BYMINUTE.
	at := func(n int) string {
		h, err1 := strconv.Atoi(parts["BYHOUR"])
		m, err2 := strconv.Atoi(parts["BYMINUTE"])
		if err1 != nil || err2 != nil || h < 0 || h > 23 || m < 0 || m > 59 || len(parts) != n {
			return ""
		}
		return " at " + twoDigits(h) + ":" + twoDigits(m)
	}
	switch parts["FREQ"] {
	case "DAILY":
		if t := at(3); t != "" {
			return "every day" + t
		}
	case "WEEKLY":
		t := at(4)
		if t == "" {
			return ""
		}
		if parts["BYDAY"] == "MO,TU,WE,TH,FR" {
			return "every weekday" + t
		}
		for _, d := range weekdays {
			if parts["BYDAY"] == d.Code {
				return "every " + d.Name + t
			}
		}
	case "HOURLY":
		if len(parts) != 2 {
			return ""
		}
		if parts["BYMINUTE"] == "0" {
			return "every hour"
		}
		for _, n := range PickerMinutes {
			if parts["BYMINUTE"] == minutesEvery(n) {
				return "every " + minutes(n)
			}
		}
	}
	return ""
}

// minutesEvery is the BYMINUTE list of every n minutes ("0,15,30,45").
func minutesEvery(n int) string {
	var ms []string
	for m := 0; m < 60; m += n {
		ms = append(ms, itoa(m))
	}
	return strings.Join(ms, ",")
}

func twoDigits(n int) string {
	if n < 10 {
		return "0" + itoa(n)
	}
	return itoa(n)
}

// minutes is "1 minute" or "n minutes".
func minutes(n int) string {
	if n == 1 {
		return "1 minute"
	}
	return itoa(n) + " minutes"
}
