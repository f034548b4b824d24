package agent

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/teambition/rrule-go"
)

// Schedules (DESIGN.md §11.8): a prompt sent as an ordinary turn at each
// slot of an RRULE or a cron expression. Every slot is claimed in the
// store (a unique (schedule, slot) row) before it runs, so a slot runs once
// across restarts and instances on one database.

// Missed-slot policies: what a schedule does with the slots that passed
// more than MissedGrace ago without running (the server was stopped).
const (
	MissedSkip = "skip" // run none of them
	MissedOnce = "once" // run the latest of them, once
)

// Outcomes of a schedule run.
const (
	RunClaimed = "claimed" // claimed, not yet sent (a crash here is retried)
	RunStarted = "started" // the turn started
	RunQueued  = "queued"  // the target conversation was busy: queued behind its turn
	RunFailed  = "failed"  // the send was refused (see Error)
)

// Schedule is a durable recurring prompt.
type Schedule struct {
	ID             string     `json:"id"`
	Owner          string     `json:"owner"`
	Agent          string     `json:"agent,omitempty"`
	Prompt         string     `json:"prompt"`
	RRule          string     `json:"rrule,omitempty"` // with its DTSTART
	Cron           string     `json:"cron,omitempty"`
	Timezone       string     `json:"timezone"`
	ConversationID string     `json:"conversation_id,omitempty"`
	Missed         string     `json:"missed"`
	Enabled        bool       `json:"enabled"`
	CreatedAt      time.Time  `json:"created_at"`
	NextRun        *time.Time `json:"next_run"`
	// Held says why an enabled schedule does not run (its owner is
	// disabled); its slots meanwhile are not owed.
	Held string `json:"held,omitempty"`

	OwnerRole string    `json:"-"` // the creator's role, the runs' principal
	Cursor    time.Time `json:"-"` // slots at or before it are handled
}

// ScheduleRun is one claimed slot of a schedule.
type ScheduleRun struct {
	ScheduleID     string    `json:"-"`
	Slot           time.Time `json:"slot"`
	ConversationID string    `json:"conversation_id,omitempty"`
	Outcome        string    `json:"outcome"`
	Error          string    `json:"error,omitempty"`
	ClaimedAt      time.Time `json:"-"`
}

// ScheduleStore keeps schedules and their claimed slots.
type ScheduleStore interface {
	PutSchedule(ctx context.Context, s Schedule) error
	// Schedules lists the schedules of owner (every owner's when "").
	Schedules(ctx context.Context, owner string) ([]Schedule, error)
	// Schedule is one schedule; not_found when there is none.
	Schedule(ctx context.Context, id string) (Schedule, error)
	DeleteSchedule(ctx context.Context, id string) error
	// AdvanceSchedule moves a schedule's cursor forward (never back).
	AdvanceSchedule(ctx context.Context, id string, cursor time.Time) error
	// ClaimSlot inserts run; false when its (schedule, slot) was claimed.
	ClaimSlot(ctx context.Context, run ScheduleRun) (bool, error)
	// UpdateRun writes run's conversation, outcome and error.
	UpdateRun(ctx context.Context, run ScheduleRun) error
	// LeaseRun takes over a run left claimed by a dead process: it moves
	// its ClaimedAt from old to now; false when another did first.
	LeaseRun(ctx context.Context, run ScheduleRun, old, now time.Time) (bool, error)
	// ScheduleRuns lists a schedule's runs, oldest slot first.
	ScheduleRuns(ctx context.Context, id string) ([]ScheduleRun, error)
	// StaleRuns lists runs still claimed, claimed before before.
	StaleRuns(ctx context.Context, before time.Time) ([]ScheduleRun, error)
}

// ScheduleInput is what POST/PATCH /agentik/schedules take.
type ScheduleInput struct {
	Agent          *string `json:"agent"`
	Prompt         *string `json:"prompt"`
	RRule          *string `json:"rrule"`
	Cron           *string `json:"cron"`
	Timezone       *string `json:"timezone"`
	ConversationID *string `json:"conversation_id"`
	Missed         *string `json:"missed"`
	Enabled        *bool   `json:"enabled"`
}

// Scheduler runs schedules through a Runner.
type Scheduler struct {
	Runner *Runner
	Store  ScheduleStore
	Now    Clock // time.Now when nil
	Logger *slog.Logger
	// MissedGrace: a slot later than this is missed (default 1 minute);
	// one within it runs, late.
	MissedGrace time.Duration
	// Every is the loop's period (default 500ms).
	Every time.Duration
	// Users, when set, is asked whether a schedule's owner stands
	// (exists, not disabled): nothing runs for one who does not. nil:
	// every owner stands (no accounts).
	Users UserStore
	// MaxPerUser caps the schedules of one user (DefaultMaxSchedules
	// when 0; AGENTIK_MAX_SCHEDULES).
	MaxPerUser int
	// MinInterval is the shortest time a rule may leave between two runs
	// (DefaultMinInterval when 0; AGENTIK_SCHEDULE_MIN_INTERVAL): a rule
	// that runs more often is refused.
	MinInterval time.Duration

	mu sync.Mutex // one Tick at a time in this process

	nextMu sync.Mutex
	nexts  map[string]nextSlot // by schedule id: its next slot, computed once per cursor
	walks  int                 // calendar walks made (tests)
}

// DefaultMaxSchedules is how many schedules one user may have by default.
const DefaultMaxSchedules = 100

// DefaultMinInterval is the shortest time between two runs of a schedule
// by default: once a minute.
const DefaultMinInterval = time.Minute

// onceEvery says how often a schedule may run at most, in words.
func onceEvery(d time.Duration) string {
	if d == time.Minute {
		return "once a minute"
	}
	return "once every " + d.String()
}

func (s *Scheduler) minInterval() time.Duration {
	if s.MinInterval > 0 {
		return s.MinInterval
	}
	return DefaultMinInterval
}

// nextSlot is a schedule's first slot after its cursor, kept with what it
// was computed from.
type nextSlot struct {
	key string
	at  time.Time // zero: none within SlotHorizon
}

// heldDisabled is Schedule.Held for an owner who is disabled or deleted.
const heldDisabled = "its owner is disabled: nothing runs until an admin enables them again"

func (s *Scheduler) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Scheduler) grace() time.Duration {
	if s.MissedGrace > 0 {
		return s.MissedGrace
	}
	return time.Minute
}

// recurrence is a parsed RRULE or cron expression.
type recurrence struct {
	rule            *rrule.RRule // nil: cron
	rdates, exdates []time.Time
	// anchored: the rule may start again at any instant without changing
	// its later slots (INTERVAL 1, no COUNT, no weekly BYSETPOS), so a
	// search starts where it is asked, not at DTSTART.
	anchored bool
	cron     cron.Schedule
	loc      *time.Location
}

// SlotHorizon bounds every search for a schedule's next slot: a rule with
// no slot within it is refused when made, and one that has none left
// within it has no next run.
const SlotHorizon = 5 * 365 * 24 * time.Hour

// cycleYears is the Gregorian calendar's period: dates, weekdays and leap
// days repeat every 400 years.
const cycleYears = 400

// after returns the first slot strictly after t within SlotHorizon (zero
// when none). Its cost is bounded whatever the rule: rrule-go walks day by
// day up to the year 9999 when no day matches (seconds of CPU for a rule
// that never matches), so the search runs k·400 years later, where the
// calendar is the same and the year 9999 comes within about 400 years,
// and the slot found is moved back.
func (r recurrence) after(t time.Time) time.Time {
	if r.rule == nil {
		n := r.cron.Next(t.In(r.loc)) // robfig/cron gives up after 5 years itself
		if n.IsZero() || n.Sub(t) > SlotHorizon {
			return time.Time{}
		}
		return n
	}
	shift := max((9990-t.In(r.loc).Year())/cycleYears, 0) * cycleYears
	move := func(x time.Time, years int) time.Time {
		x = x.In(r.loc)
		return time.Date(x.Year()+years, x.Month(), x.Day(), x.Hour(), x.Minute(), x.Second(), x.Nanosecond(), r.loc)
	}
	o := r.rule.OrigOptions
	if r.anchored && t.After(o.Dtstart) {
		o = withDefaults(o)
		o.Dtstart = t
	}
	o.Dtstart = move(o.Dtstart, shift)
	if !o.Until.IsZero() {
		o.Until = move(o.Until, shift)
	}
	rule, err := rrule.NewRRule(o)
	if err != nil {
		return time.Time{}
	}
	set := &rrule.Set{}
	set.RRule(rule)
	for _, d := range r.rdates {
		set.RDate(move(d, shift))
	}
	for _, d := range r.exdates {
		set.ExDate(move(d, shift))
	}
	st := move(t, shift)
	n := set.After(st, false)
	if n.IsZero() || n.Sub(st) > SlotHorizon {
		return time.Time{}
	}
	return move(n, -shift)
}

// withDefaults writes out what a rule takes from its DTSTART when it does
// not say (rrule-go's buildRRule, RFC 5545 §3.3.10): the time of day, and
// the weekday, day or month of its period; so the rule keeps its slots
// when it starts again at another instant.
func withDefaults(o rrule.ROption) rrule.ROption {
	dt := o.Dtstart
	if len(o.Byweekno) == 0 && len(o.Byyearday) == 0 && len(o.Bymonthday) == 0 && len(o.Byweekday) == 0 && len(o.Byeaster) == 0 {
		switch o.Freq {
		case rrule.YEARLY:
			if len(o.Bymonth) == 0 {
				o.Bymonth = []int{int(dt.Month())}
			}
			o.Bymonthday = []int{dt.Day()}
		case rrule.MONTHLY:
			o.Bymonthday = []int{dt.Day()}
		case rrule.WEEKLY:
			o.Byweekday = []rrule.Weekday{[]rrule.Weekday{rrule.SU, rrule.MO, rrule.TU, rrule.WE, rrule.TH, rrule.FR, rrule.SA}[dt.Weekday()]}
		}
	}
	if len(o.Byhour) == 0 && o.Freq < rrule.HOURLY {
		o.Byhour = []int{dt.Hour()}
	}
	if len(o.Byminute) == 0 && o.Freq < rrule.MINUTELY {
		o.Byminute = []int{dt.Minute()}
	}
	if len(o.Bysecond) == 0 && o.Freq < rrule.SECONDLY {
		o.Bysecond = []int{dt.Second()}
	}
	return o
}

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// parseRecurrence checks and normalizes sc's RRULE or cron in its time
// zone; an RRULE without DTSTART starts at start.
func parseRecurrence(sc *Schedule, start time.Time, least time.Duration) (recurrence, error) {
	tz := sc.Timezone
	if tz == "" {
		tz = "UTC"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil || tz == "Local" {
		return recurrence{}, Errorf(CodeBadRequest, "timezone %q is not an IANA time zone (such as \"Europe/Paris\" or \"UTC\")", Shorten(tz, 60))
	}
	sc.Timezone = tz
	switch {
	case sc.RRule != "" && sc.Cron != "":
		return recurrence{}, Errorf(CodeBadRequest, "give rrule or cron, not both")
	case sc.RRule == "" && sc.Cron == "":
		return recurrence{}, Errorf(CodeBadRequest, "rrule or cron is required (such as \"FREQ=DAILY;BYHOUR=9;BYMINUTE=0\" or \"0 9 * * 1-5\")")
	case sc.Cron != "":
		if len(strings.Fields(sc.Cron)) == 6 { // the parser takes 5 fields
			return recurrence{}, Errorf(CodeBadRequest, "cron %q has 6 fields: a field of seconds is not supported, a schedule runs at most once a minute; give 5 fields: minute hour day-of-month month day-of-week", Shorten(sc.Cron, 60))
		}
		c, err := cronParser.Parse(sc.Cron)
		if err != nil {
			return recurrence{}, Errorf(CodeBadRequest, "cron %q does not parse (%v); give 5 fields: minute hour day-of-month month day-of-week", Shorten(sc.Cron, 60), err)
		}
		if d, ok := c.(cron.ConstantDelaySchedule); ok && d.Delay < least {
			return recurrence{}, Errorf(CodeBadRequest, "cron %q runs more often than %s, the most a schedule may; use @every %s or longer", Shorten(sc.Cron, 60), onceEvery(least), least)
		}
		return recurrence{cron: c, loc: loc}, nil
	}
	var lines []string
	for _, l := range strings.FieldsFunc(sc.RRule, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return recurrence{}, Errorf(CodeBadRequest, "rrule is empty")
	}
	if !strings.HasPrefix(strings.ToUpper(lines[0]), "DTSTART") {
		if !strings.Contains(strings.ToUpper(lines[0]), ":") {
			lines[0] = "RRULE:" + lines[0]
		}
		dt := "DTSTART;TZID=" + tz + ":" + start.In(loc).Format("20060102T150405")
		if tz == "UTC" {
			dt = "DTSTART:" + start.UTC().Format("20060102T150405") + "Z"
		}
		lines = append([]string{dt}, lines...)
	}
	bad := func(err error) error {
		return Errorf(CodeBadRequest, "rrule %q does not parse (%v); give an RFC 5545 rule such as \"FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=9;BYMINUTE=0\"", Shorten(sc.RRule, 80), err)
	}
	set, err := rrule.StrSliceToRRuleSetInLoc(lines, loc)
	if err != nil {
		return recurrence{}, bad(err)
	}
	rule := set.GetRRule()
	if rule == nil {
		return recurrence{}, bad(fmt.Errorf("no RRULE line"))
	}
	o := rule.OrigOptions
	switch {
	case least >= time.Minute && (o.Freq == rrule.SECONDLY || len(o.Bysecond) > 1),
		o.Freq == rrule.SECONDLY && time.Duration(max(o.Interval, 1))*time.Second < least:
		return recurrence{}, Errorf(CodeBadRequest, "rrule %q runs more often than %s, the most a schedule may: use FREQ=MINUTELY or longer, with at most one BYSECOND", Shorten(sc.RRule, 80), onceEvery(least))
	case len(o.Bysetpos) > 0 && (o.Freq == rrule.HOURLY || o.Freq == rrule.MINUTELY):
		return recurrence{}, Errorf(CodeBadRequest, "rrule %q: BYSETPOS needs FREQ=DAILY or longer (an hourly or minutely set has one slot)", Shorten(sc.RRule, 80))
	}
	sc.RRule = strings.Join(lines, "\n")
	return recurrence{rule: rule, rdates: set.GetRDate(), exdates: set.GetExDate(), loc: loc,
		anchored: o.Interval <= 1 && o.Count == 0 && !(o.Freq == rrule.WEEKLY && len(o.Bysetpos) > 0)}, nil
}

func checkMissed(m string) (string, error) {
	switch m {
	case "":
		return MissedOnce, nil
	case MissedSkip, MissedOnce:
		return m, nil
	}
	return "", Errorf(CodeBadRequest, "missed must be %q or %q, got %q", MissedSkip, MissedOnce, Shorten(m, 40))
}

// next is sc's first slot after its cursor (zero: none within
// SlotHorizon, or a rule that no longer parses), computed once for each
// cursor and rule, so neither a list nor an idle tick walks a calendar.
func (s *Scheduler) next(sc Schedule) time.Time {
	key := sc.RRule + "\x00" + sc.Cron + "\x00" + sc.Timezone + "\x00" + sc.Cursor.Format(time.RFC3339Nano) + "\x00" + sc.CreatedAt.Format(time.RFC3339Nano)
	s.nextMu.Lock()
	n, ok := s.nexts[sc.ID]
	s.nextMu.Unlock()
	if ok && n.key == key {
		return n.at
	}
	n = nextSlot{key: key}
	if rec, err := parseRecurrence(&sc, sc.CreatedAt, s.minInterval()); err == nil {
		n.at = rec.after(sc.Cursor)
	}
	s.nextMu.Lock()
	if s.nexts == nil {
		s.nexts = map[string]nextSlot{}
	}
	s.nexts[sc.ID] = n
	s.walks++
	s.nextMu.Unlock()
	return n.at
}

// forget drops what next kept of schedule id.
func (s *Scheduler) forget(id string) {
	s.nextMu.Lock()
	delete(s.nexts, id)
	s.nextMu.Unlock()
}

func (s *Scheduler) withNext(sc Schedule) Schedule {
	sc.NextRun = nil
	if !sc.Enabled || sc.Held != "" {
		return sc
	}
	t := s.next(sc)
	if !t.IsZero() && !t.After(s.now()) {
		// Due and not yet run (the next tick runs it), or missed while
		// stopped: what runs next is the first slot from now.
		if rec, err := parseRecurrence(&sc, sc.CreatedAt, s.minInterval()); err == nil {
			t = rec.after(s.now())
		}
	}
	if !t.IsZero() {
		t = t.UTC()
		sc.NextRun = &t
	}
	return sc
}

// held marks the schedules among scs whose owner does not stand, in one
// read of the owners.
func (s *Scheduler) held(ctx context.Context, scs []Schedule) error {
	if s.Users == nil || len(scs) == 0 {
		return nil
	}
	var ids []string
	for _, sc := range scs {
		if sc.Owner != LocalUser && !slices.Contains(ids, sc.Owner) {
			ids = append(ids, sc.Owner)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	standing, err := s.Users.Standing(ctx, ids)
	if err != nil {
		return fmt.Errorf("schedules: owners: %w", err)
	}
	for i, sc := range scs {
		if _, ok := standing[sc.Owner]; !ok && sc.Owner != LocalUser {
			scs[i].Held = heldDisabled
		}
	}
	return nil
}

// Upcoming is sc's next n slots from now (fewer when its rule ends; none
// when it is disabled or held), for showing what will run when.
func (s *Scheduler) Upcoming(sc Schedule, n int) []time.Time {
	sc = s.withNext(sc)
	if sc.NextRun == nil || n <= 0 {
		return nil
	}
	rec, err := parseRecurrence(&sc, sc.CreatedAt, s.minInterval())
	if err != nil {
		return nil
	}
	ts := []time.Time{*sc.NextRun}
	for len(ts) < n {
		t := rec.after(ts[len(ts)-1])
		if t.IsZero() {
			break
		}
		ts = append(ts, t)
	}
	return ts
}

// Create makes a schedule owned by the caller.
func (s *Scheduler) Create(ctx context.Context, in ScheduleInput) (Schedule, error) {
	p := PrincipalFrom(ctx)
	now := s.now().UTC()
	sc := Schedule{ID: NewID(), Owner: p.UserID, OwnerRole: p.Role, Enabled: true, CreatedAt: now, Cursor: now.Add(-time.Second).Truncate(time.Second)}
	if err := s.apply(ctx, &sc, in, true); err != nil {
		return Schedule{}, err
	}
	most := s.MaxPerUser
	if most <= 0 {
		most = DefaultMaxSchedules
	}
	if mine, err := s.Store.Schedules(ctx, sc.Owner); err != nil {
		return Schedule{}, err
	} else if len(mine) >= most {
		return Schedule{}, Errorf(CodeBadRequest, "you have %d schedules, the most one user may have (AGENTIK_MAX_SCHEDULES); delete one first", len(mine))
	}
	if err := s.Store.PutSchedule(ctx, sc); err != nil {
		return Schedule{}, err
	}
	return s.withNext(sc), nil
}

// apply checks in and writes it into sc.
func (s *Scheduler) apply(ctx context.Context, sc *Schedule, in ScheduleInput, create bool) error {
	if in.Agent != nil {
		sc.Agent = strings.TrimSpace(*in.Agent)
		if sc.Agent != "" {
			if d, err := s.Runner.agent(ctx, sc.Agent); err != nil || d.Deleted {
				return Errorf(CodeBadRequest, "agent %q is not an agent you may use; GET /agentik/agents lists them", Shorten(sc.Agent, 60))
			}
		}
	}
	if in.Prompt != nil {
		sc.Prompt = *in.Prompt
	}
	if strings.TrimSpace(sc.Prompt) == "" {
		return Errorf(CodeBadRequest, "prompt is required: the message sent at each slot")
	}
	if err := CheckContent([]Content{Text(sc.Prompt)}); err != nil {
		return err
	}
	if in.RRule != nil || in.Cron != nil {
		sc.RRule, sc.Cron = "", ""
		if in.RRule != nil {
			sc.RRule = strings.TrimSpace(*in.RRule)
		}
		if in.Cron != nil {
			sc.Cron = strings.TrimSpace(*in.Cron)
		}
	}
	if in.Timezone != nil {
		sc.Timezone = strings.TrimSpace(*in.Timezone)
	}
	start := s.now()
	if !create {
		start = sc.CreatedAt
	}
	rec, err := parseRecurrence(sc, start, s.minInterval())
	if err != nil {
		return err
	}
	if create || in.RRule != nil || in.Cron != nil || in.Timezone != nil {
		if rec.after(s.now()).IsZero() {
			what, rule := "rrule", sc.RRule
			if sc.Cron != "" {
				what, rule = "cron", sc.Cron
			}
			return Errorf(CodeBadRequest, "%s %q has no slot in the next 5 years (its days never match, or it has ended); give a rule that runs at least once in that time", what, Shorten(rule, 80))
		}
	}
	if in.ConversationID != nil && *in.ConversationID != sc.ConversationID {
		sc.ConversationID = *in.ConversationID
		if sc.ConversationID != "" {
			if _, err := s.Runner.conversation(ctx, sc.ConversationID); err != nil {
				if ErrorCode(err) == CodeNotFound {
					return Errorf(CodeBadRequest, "conversation_id %q is not a conversation of yours", Shorten(sc.ConversationID, 60))
				}
				return err
			}
		}
	}
	m, err := checkMissed(sc.Missed)
	if in.Missed != nil {
		m, err = checkMissed(*in.Missed)
	}
	if err != nil {
		return err
	}
	sc.Missed = m
	if in.Enabled != nil {
		if *in.Enabled && !sc.Enabled { // slots while it was off are not owed
			sc.Cursor = s.now().UTC().Add(-time.Second)
		}
		sc.Enabled = *in.Enabled
	}
	return nil
}

// mine returns schedule id when the caller may act on it.
func (s *Scheduler) mine(ctx context.Context, id string) (Schedule, error) {
	sc, err := s.Store.Schedule(ctx, id)
	if err != nil {
		return Schedule{}, err
	}
	p := PrincipalFrom(ctx)
	if sc.Owner != p.UserID && !p.Admin() {
		return Schedule{}, Errorf(CodeNotFound, "no schedule %q", Shorten(id, 60))
	}
	return sc, nil
}

// List lists the caller's schedules (an admin's: everyone's).
func (s *Scheduler) List(ctx context.Context) ([]Schedule, error) {
	p := PrincipalFrom(ctx)
	owner := p.UserID
	if p.Admin() {
		owner = ""
	}
	scs, err := s.Store.Schedules(ctx, owner)
	if err != nil {
		return nil, err
	}
	if err := s.held(ctx, scs); err != nil {
		return nil, err
	}
	for i := range scs {
		scs[i] = s.withNext(scs[i])
	}
	return scs, nil
}

// Get returns one of the caller's schedules.
func (s *Scheduler) Get(ctx context.Context, id string) (Schedule, error) {
	sc, err := s.mine(ctx, id)
	if err != nil {
		return Schedule{}, err
	}
	one := []Schedule{sc}
	if err := s.held(ctx, one); err != nil {
		return Schedule{}, err
	}
	return s.withNext(one[0]), nil
}

// Update changes a schedule; nothing is stored when in is bad.
func (s *Scheduler) Update(ctx context.Context, id string, in ScheduleInput) (Schedule, error) {
	sc, err := s.mine(ctx, id)
	if err != nil {
		return Schedule{}, err
	}
	if err := s.apply(ctx, &sc, in, false); err != nil {
		return Schedule{}, err
	}
	if err := s.Store.PutSchedule(ctx, sc); err != nil {
		return Schedule{}, err
	}
	return s.withNext(sc), nil
}

// Delete removes a schedule and its runs (their conversations stay).
func (s *Scheduler) Delete(ctx context.Context, id string) error {
	if _, err := s.mine(ctx, id); err != nil {
		return err
	}
	defer s.forget(id)
	return s.Store.DeleteSchedule(ctx, id)
}

// Runs lists a schedule's runs.
func (s *Scheduler) Runs(ctx context.Context, id string) ([]ScheduleRun, error) {
	if _, err := s.mine(ctx, id); err != nil {
		return nil, err
	}
	return s.Store.ScheduleRuns(ctx, id)
}

// scheduleClientPrefix starts the client_id of a schedule run's message.
const scheduleClientPrefix = "schedule:"

// ScheduleClientID is the client_id of the message a schedule's run at
// slot sends: a retried send of the same slot is a duplicate, and the UI
// knows the message (and its conversation) for a scheduled run's.
func ScheduleClientID(scheduleID string, slot time.Time) string {
	return fmt.Sprintf("%s%s:%d", scheduleClientPrefix, scheduleID, slot.Unix())
}

// ScheduleOf is the schedule whose run sent the message of clientID; ""
// for a message a person (or another client) sent.
func ScheduleOf(clientID string) string {
	rest, ok := strings.CutPrefix(clientID, scheduleClientPrefix)
	if !ok {
		return ""
	}
	id, _, ok := strings.Cut(rest, ":")
	if !ok {
		return ""
	}
	return id
}

// Run ticks until ctx ends.
func (s *Scheduler) Run(ctx context.Context) {
	every := s.Every
	if every <= 0 {
		every = 500 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := s.Tick(ctx); err != nil && ctx.Err() == nil && s.Logger != nil {
			s.Logger.Warn("schedules", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// maxSlotsPerTick bounds the slots one schedule walks in one tick.
const maxSlotsPerTick = 100000

// Tick claims and runs every slot due now, and retries runs a dead
// process left claimed.
func (s *Scheduler) Tick(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	stale, err := s.Store.StaleRuns(ctx, now.Add(-10*time.Second))
	if err != nil {
		return err
	}
	for _, run := range stale {
		ok, err := s.Store.LeaseRun(ctx, run, run.ClaimedAt, now)
		if err != nil || !ok {
			continue
		}
		sc, err := s.Store.Schedule(ctx, run.ScheduleID)
		if err != nil {
			continue
		}
		run.ClaimedAt = now
		s.start(ctx, sc, run)
	}
	scs, err := s.Store.Schedules(ctx, "")
	if err != nil {
		return err
	}
	// Only a schedule whose next slot is due costs more than a map read.
	due := scs[:0]
	for _, sc := range scs {
		if n := s.next(sc); sc.Enabled && !n.IsZero() && !n.After(now) {
			due = append(due, sc)
		}
	}
	if err := s.held(ctx, due); err != nil {
		return err
	}
	for _, sc := range due {
		if err := s.tickOne(ctx, sc, now); err != nil {
			return err
		}
	}
	return nil
}

// tickOne claims and runs sc's slots due at now, and moves its cursor
// past them. A held schedule (its owner disabled) runs none: its slots
// are not owed, as those of a schedule switched off.
func (s *Scheduler) tickOne(ctx context.Context, sc Schedule, now time.Time) error {
	rec, err := parseRecurrence(&sc, sc.CreatedAt, s.minInterval())
	if err != nil {
		return nil
	}
	var missed, due []time.Time
	cursor := sc.Cursor
	for i, t := 0, s.next(sc); i < maxSlotsPerTick && !t.IsZero() && !t.After(now); i, t = i+1, rec.after(cursor) {
		cursor = t
		if now.Sub(t) > s.grace() {
			missed = append(missed[:0], t) // only the latest is kept
		} else {
			due = append(due, t)
		}
	}
	if cursor.Equal(sc.Cursor) {
		return nil
	}
	if len(missed) > 0 && sc.Missed == MissedOnce {
		due = append(missed, due...)
	}
	if sc.Held != "" {
		due = nil
		if s.Logger != nil {
			s.Logger.Info("schedule_held", "schedule", sc.ID, "owner", sc.Owner, "reason", "owner_disabled")
		}
	}
	for _, slot := range due {
		// Claimed now, not at the tick's start: another instance takes
		// over a run claimed more than 10 s ago and not started, and a
		// tick of many slots may take longer than that.
		run := ScheduleRun{ScheduleID: sc.ID, Slot: slot.UTC(), Outcome: RunClaimed, ConversationID: sc.ConversationID, ClaimedAt: s.now()}
		ok, err := s.Store.ClaimSlot(ctx, run)
		if err != nil {
			return err
		}
		if ok {
			s.start(ctx, sc, run)
		}
	}
	return s.Store.AdvanceSchedule(ctx, sc.ID, cursor)
}

// start sends sc's prompt for run, as sc's owner, and records the outcome.
func (s *Scheduler) start(ctx context.Context, sc Schedule, run ScheduleRun) {
	p := Principal{UserID: sc.Owner, Role: sc.OwnerRole}
	if p.Role == "" {
		p.Role = RoleMember
	}
	if p.UserID == LocalUser {
		p = Local
	}
	ctx = WithPrincipal(ctx, p)
	fail := func(err error) {
		run.Outcome, run.Error = RunFailed, err.Error()
		if uerr := s.Store.UpdateRun(ctx, run); uerr != nil && s.Logger != nil {
			s.Logger.Warn("schedule run", "schedule", sc.ID, "err", uerr)
		}
	}
	// Refused before anything is made: a run over the budget (or for an
	// owner disabled since the tick read them) is a failed run, with no
	// empty conversation.
	if err := s.Runner.MayRun(ctx, p.UserID); err != nil {
		fail(err)
		return
	}
	if run.ConversationID == "" {
		var set Settings
		if sc.Agent != "" {
			set.Agent = &sc.Agent
		}
		c, err := s.Runner.Create(ctx, NewConversation{Settings: set})
		if err != nil {
			fail(err)
			return
		}
		run.ConversationID = c.ID
		if err := s.Store.UpdateRun(ctx, run); err != nil {
			fail(err)
			return
		}
	}
	clientID := ScheduleClientID(sc.ID, run.Slot)
	res, err := s.Runner.Start(ctx, StartInput{ConversationID: run.ConversationID, Content: []Content{Text(sc.Prompt)}, ClientID: clientID, OnBusy: OnBusyQueue})
	if err != nil {
		fail(err)
		return
	}
	run.Outcome = RunStarted
	if res.Queued {
		run.Outcome = RunQueued
	}
	if err := s.Store.UpdateRun(ctx, run); err != nil && s.Logger != nil {
		s.Logger.Warn("schedule run", "schedule", sc.ID, "err", err)
	}
}
