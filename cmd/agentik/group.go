package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/agentik/agentik/internal/agent"
)

// restCall sends in as JSON to a running server's route (as
// AGENTIK_API_KEY) and decodes its answer into out (nil: none).
func restCall(ctx context.Context, cf clientFlags, getenv func(string) string, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	resp, err := archiveRequest(ctx, cf, getenv, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// runGroup manages groups on a running server (its admin REST routes, as
// AGENTIK_API_KEY): agentik group list|add|rename|delete|member.
func runGroup(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentik group", flag.ContinueOnError)
	fs.SetOutput(helpOut(args, stdout, stderr))
	var cf clientFlags
	cf.register(fs, getenv, stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: agentik group [--server URL] COMMAND
  list                                  every group (a member: theirs), with its members
  add NAME [USER_ID...]                 make a group, print its id
  rename ID NAME                        rename a group
  delete ID                             delete a group (what was shared with it is its owners' again)
  member add|remove ID USER_ID          add a user to a group, or remove them
Runs against a running server as AGENTIK_API_KEY (an admin's key; none on loopback without keys).`)
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
		return errors.New("group: give a command: list, add, rename, delete or member")
	}
	need := func(n int) error {
		if len(pos) != n+1 {
			return fmt.Errorf("group %s: takes %d argument(s), got %d", pos[0], n, len(pos)-1)
		}
		return nil
	}
	do := func(method, path string, in, out any) error {
		if err := restCall(ctx, cf, getenv, method, path, in, out); err != nil {
			return fmt.Errorf("group %s: %w", pos[0], err)
		}
		return nil
	}
	switch pos[0] {
	case "list":
		if err := need(0); err != nil {
			return err
		}
		var res struct{ Groups []agent.Group }
		if err := do(http.MethodGet, "/agentik/groups", nil, &res); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tSOURCE\tMEMBERS")
		for _, g := range res.Groups {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", g.ID, g.Name, g.Source, strings.Join(g.Members, ","))
		}
		return tw.Flush()
	case "add":
		if len(pos) < 2 {
			return errors.New("group add: give the group's name (and user ids)")
		}
		var g agent.Group
		if err := do(http.MethodPost, "/agentik/groups", map[string]any{"name": pos[1], "members": append([]string{}, pos[2:]...)}, &g); err != nil {
			return err
		}
		fmt.Fprintln(stdout, g.ID)
	case "rename":
		if err := need(2); err != nil {
			return err
		}
		if err := do(http.MethodPatch, "/agentik/groups/"+url.PathEscape(pos[1]), map[string]string{"name": pos[2]}, nil); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "renamed %s\n", pos[1])
	case "delete":
		if err := need(1); err != nil {
			return err
		}
		if err := do(http.MethodDelete, "/agentik/groups/"+url.PathEscape(pos[1]), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "deleted %s\n", pos[1])
	case "member":
		if err := need(3); err != nil {
			return err
		}
		method := map[string]string{"add": http.MethodPut, "remove": http.MethodDelete}[pos[1]]
		if method == "" {
			return fmt.Errorf("group member: add or remove, got %q", pos[1])
		}
		if err := do(method, "/agentik/groups/"+url.PathEscape(pos[2])+"/members/"+url.PathEscape(pos[3]), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s %s: %s\n", pos[1], pos[3], pos[2])
	default:
		return fmt.Errorf("group: unknown command %q: list, add, rename, delete or member", pos[0])
	}
	return nil
}
