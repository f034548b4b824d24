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
	"github.com/agentik/agentik/internal/protocol"
)

// runInbox lists and answers what waits for the caller on a running
// server (/agentik/inbox, as AGENTIK_API_KEY): agentik inbox
// [list|resolved|approve ID|deny ID].
func runInbox(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentik inbox", flag.ContinueOnError)
	fs.SetOutput(helpOut(args, stdout, stderr))
	var cf clientFlags
	cf.register(fs, getenv, stderr)
	reason := fs.String("reason", "", "approve, deny: the reason the model reads")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: agentik inbox [--server URL] [COMMAND]
  list              what waits for you: approvals and requests for input (the default)
  resolved          what was answered, by whom and when
  approve ID        approve a waiting tool call
  deny ID           deny a waiting tool call`)
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
		pos = []string{"list"}
	}
	want, ok := map[string]int{"list": 0, "resolved": 0, "approve": 1, "deny": 1}[pos[0]]
	if !ok {
		return fmt.Errorf("inbox: unknown command %q: list, resolved, approve or deny", pos[0])
	}
	if len(pos) != want+1 {
		return fmt.Errorf("inbox %s: takes %d argument(s), got %d", pos[0], want, len(pos)-1)
	}
	do := func(method, path string, in, out any) error {
		if err := restCall(ctx, cf, getenv, method, path, in, out); err != nil {
			return fmt.Errorf("inbox %s: %w", pos[0], err)
		}
		return nil
	}
	switch pos[0] {
	case "list", "resolved":
		state := agent.InboxPending
		if pos[0] == "resolved" {
			state = agent.InboxResolved
		}
		var res struct{ Items []agent.InboxItem }
		if err := do(http.MethodGet, "/agentik/inbox?state="+state, nil, &res); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tKIND\tSINCE\tCONVERSATION\tWHAT\tRESOLVED")
		for _, it := range res.Items {
			what := it.Title
			if it.Kind == agent.InboxApproval {
				what += " " + it.Detail.Arguments
			}
			done := "-"
			if it.State == agent.InboxResolved {
				done = it.Detail.Decision + it.Detail.Action
				if it.ResolvedBy != "" {
					done += " by " + it.ResolvedBy
				}
			}
			conv := it.Detail.Conversation
			if conv == "" {
				conv = it.ConversationID
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", it.ID, it.Kind, it.CreatedAt.Local().Format(time.RFC3339),
				agent.Shorten(conv, 30), agent.Shorten(what, 50), done)
		}
		return tw.Flush()
	default: // approve, deny
		in := protocol.InboxAnswerRequest{Decision: pos[0], Reason: *reason}
		if err := do(http.MethodPost, "/agentik/inbox/"+url.PathEscape(pos[1]), in, nil); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%sd %s\n", pos[0], pos[1])
	}
	return nil
}
