package web

// SchedulesPage lists the caller's schedules (an admin's: everyone's) with
// their next slots and latest runs, and the form that makes one.
type SchedulesPage struct {
	PageAssets
	Admin     bool
	Schedules []ScheduleRow
	Agents    []AgentOption // those the caller may schedule
}

// AgentOption is one agent a schedule may run on.
type AgentOption struct {
	Slug, Name string
}

// ScheduleRow is one schedule as the page shows it; times are written in
// the schedule's time zone.
type ScheduleRow struct {
	ID             string
	Owner          string // shown to admins
	Agent          string // its name; "" for the default
	Prompt         string
	Kind           string // "rrule" or "cron"
	Rule           string // the RRULE line or the cron expression
	FullRule       string // with the DTSTART line
	Timezone       string
	Missed         string // "skip" or "once"
	Enabled        bool
	ConversationID string // every run's conversation; "" for a new one per run
	Next           []string
	Runs           []RunRow // the latest first
	MoreRuns       int      // runs older than those shown
}

// RunRow is one run of a schedule.
type RunRow struct {
	Slot           string
	Outcome        string // claimed, started, queued, failed
	Error          string
	ConversationID string
}

// ScheduleRuns is how many of a schedule's latest runs the page shows.
const ScheduleRuns = 5

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
