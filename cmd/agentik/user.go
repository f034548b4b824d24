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

	"github.com/agentik/agentik/internal/agent"
)

// runUser manages accounts on a running server (its admin REST routes, as
// AGENTIK_API_KEY): agentik user add|list|disable|enable|delete|key.
func runUser(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentik user", flag.ContinueOnError)
	fs.SetOutput(helpOut(args, stdout, stderr))
	var cf clientFlags
	cf.register(fs, getenv, stderr)
	email := fs.String("email", "", "add: the user's email")
	role := fs.String("role", "member", "add: admin or member")
	budget := fs.String("budget", "", "add: a token budget of their own (2M/month, none); default: AGENTIK_DEFAULT_BUDGET")
	keyName := fs.String("name", "cli", "key: what the key is for")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: agentik user [--server URL] COMMAND
  add NAME [--email E] [--role admin|member] [--budget B]   make a user, print their id
  list                                                      every user
  disable ID | enable ID | delete ID                        stop (or allow again) a user at once
  key ID [--name N]                                         make an API key for the user, print it (shown once)
Runs against a running server as AGENTIK_API_KEY (an admin's key; none on loopback without keys).`)
		fs.PrintDefaults()
	}
	// Flags may follow the command and its argument.
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return errors.New("user: give a command: add, list, disable, enable, delete or key")
	}
	need := func(n int) error {
		if len(pos) != n+1 {
			return fmt.Errorf("user %s: takes %d argument(s), got %d", pos[0], n, len(pos)-1)
		}
		return nil
	}
	do := func(method, path string, in, out any) error {
		if err := restCall(ctx, cf, getenv, method, path, in, out); err != nil {
			return fmt.Errorf("user %s: %w", pos[0], err)
		}
		return nil
	}
	switch pos[0] {
	case "add":
		if err := need(1); err != nil {
			return err
		}
		in := agent.UserInput{Name: &pos[1], Role: role}
		if *email != "" {
			in.Email = email
		}
		if *budget != "" {
			in.Budget = budget
		}
		var u agent.User
		if err := do(http.MethodPost, "/agentik/users", in, &u); err != nil {
			return err
		}
		fmt.Fprintln(stdout, u.ID)
	case "list":
		if err := need(0); err != nil {
			return err
		}
		var res struct{ Users []agent.User }
		if err := do(http.MethodGet, "/agentik/users", nil, &res); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tEMAIL\tROLE\tSTATE\tBUDGET")
		for _, u := range res.Users {
			state := "active"
			if u.Disabled {
				state = "disabled"
			}
			b := u.Budget
			if b == "" {
				b = "default"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", u.ID, u.Name, u.Email, u.Role, state, b)
		}
		return tw.Flush()
	case "disable", "enable":
		if err := need(1); err != nil {
			return err
		}
		off := pos[0] == "disable"
		if err := do(http.MethodPatch, "/agentik/users/"+url.PathEscape(pos[1]), agent.UserInput{Disabled: &off}, nil); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%sd %s\n", pos[0], pos[1])
	case "delete":
		if err := need(1); err != nil {
			return err
		}
		if err := do(http.MethodDelete, "/agentik/users/"+url.PathEscape(pos[1]), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "deleted %s\n", pos[1])
	case "key":
		if err := need(1); err != nil {
			return err
		}
		var k agent.NewKey
		if err := do(http.MethodPost, "/agentik/users/"+url.PathEscape(pos[1])+"/keys", map[string]string{"name": *keyName}, &k); err != nil {
			return err
		}
		fmt.Fprintln(stdout, k.Key)
		fmt.Fprintf(stderr, "key %s (%s) of %s: shown this once; send it as Authorization: Bearer, or sign in with it\n", k.ID, k.Name, pos[1])
	default:
		return fmt.Errorf("user: unknown command %q: add, list, disable, enable, delete or key", pos[0])
	}
	return nil
}
