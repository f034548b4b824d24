package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// runSchedule manages schedules on a running server (/agentik/schedules,
// as AGENTIK_API_KEY): agentik schedule add|list|runs|delete.
func runSchedule(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentik schedule", flag.ContinueOnError)
	fs.SetOutput(helpOut(args, stdout, stderr))
	var cf clientFlags
	cf.register(fs, getenv, stderr)
	rr := fs.String("rrule", "", "add: an RFC 5545 rule (FREQ=DAILY;BYHOUR=9;BYMINUTE=0)")
	cr := fs.String("cron", "", "add: a 5-field cron expression (0 9 * * 1-5)")
	tz := fs.String("timezone", "", "add: an IANA time zone (default UTC)")
	conv := fs.String("conversation", "", "add: run in this conversation (default: a new one per run)")
	ag := fs.String("agent", "", "add: the agent of the runs' conversations")
	missed := fs.String("missed", "", "add: skip or once (default once)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: agentik schedule [--server URL] COMMAND
  add PROMPT (--rrule R | --cron C) [--timezone TZ] [--conversation ID] [--agent SLUG] [--missed skip|once]
  list              the schedules, with their next run
  runs ID           a schedule's runs
  delete ID         remove a schedule`)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return errors.New("schedule: give a command: add, list, runs or delete")
	}
	if want := map[string]int{"add": 1, "list": 0, "runs": 1, "delete": 1}[pos[0]]; len(pos) != want+1 {
		return fmt.Errorf("schedule %s: takes %d argument(s), got %d", pos[0], want, len(pos)-1)
	}
	do := func(method, path string, in, out any) error {
		if err := restCall(ctx, cf, getenv, method, path, in, out); err != nil {
			return fmt.Errorf("schedule %s: %w", pos[0], err)
		}
		return nil
	}
	opt := func(s *string) *string {
		if *s == "" {
			return nil
		}
		return s
	}
	next := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.Local().Format(time.RFC3339)
	}
	switch pos[0] {
	case "add":
		in := agent.ScheduleInput{Prompt: &pos[1], RRule: opt(rr), Cron: opt(cr), Timezone: opt(tz), ConversationID: opt(conv), Agent: opt(ag), Missed: opt(missed)}
		var sc agent.Schedule
		if err := do(http.MethodPost, "/agentik/schedules", in, &sc); err != nil {
			return err
		}
		fmt.Fprintln(stdout, sc.ID)
		fmt.Fprintf(stderr, "next run: %s\n", next(sc.NextRun))
	case "list":
		var res struct{ Schedules []agent.Schedule }
		if err := do(http.MethodGet, "/agentik/schedules", nil, &res); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tWHEN\tTIMEZONE\tNEXT RUN\tPROMPT")
		for _, sc := range res.Schedules {
			when := sc.Cron
			if when == "" {
				when = sc.RRule
			}
			fmt.Fprintf(tw, "%s\t%q\t%s\t%s\t%s\n", sc.ID, when, sc.Timezone, next(sc.NextRun), agent.Shorten(sc.Prompt, 40))
		}
		return tw.Flush()
	case "runs":
		var res struct{ Runs []agent.ScheduleRun }
		if err := do(http.MethodGet, "/agentik/schedules/"+url.PathEscape(pos[1])+"/runs", nil, &res); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "SLOT\tOUTCOME\tCONVERSATION")
		for _, r := range res.Runs {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Slot.Local().Format(time.RFC3339), r.Outcome, r.ConversationID)
		}
		return tw.Flush()
	case "delete":
		if err := do(http.MethodDelete, "/agentik/schedules/"+url.PathEscape(pos[1]), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "deleted %s\n", pos[1])
	default:
		return fmt.Errorf("schedule: unknown command %q: add, list, runs or delete", pos[0])
	}
	return nil
}
