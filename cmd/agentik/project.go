package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// runProject manages projects on a running server (/agentik/projects, as
// AGENTIK_API_KEY): agentik project list|add|show|member add|member
// remove|delete.
func runProject(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentik project", flag.ContinueOnError)
	fs.SetOutput(helpOut(args, stdout, stderr))
	var cf clientFlags
	cf.register(fs, getenv, stderr)
	instructions := fs.String("instructions", "", "add: instructions added to the system prompt of the project's chats")
	ag := fs.String("agent", "", "add: the default agent of its new chats")
	role := fs.String("role", agent.ProjectViewer, "member add: viewer (reads its chats) or editor (also sends in them)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: agentik project [--server URL] COMMAND
  list                                            the projects you own or are a member of
  add NAME [--instructions TEXT] [--agent SLUG]   make a project, print its id
  show ID                                         a project: its settings and members
  member add ID USER [--role viewer|editor]       add a member (USER: a user id or an email), or change their role
  member remove ID USER                           remove a member
  delete ID                                       delete a project (its chats go back to their owners)
Runs against a running server as AGENTIK_API_KEY.`)
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
		return errors.New("project: give a command: list, add, show, member or delete")
	}
	cmd := pos[0]
	if cmd == "member" && len(pos) > 1 {
		cmd, pos = "member "+pos[1], pos[1:]
	}
	want, ok := map[string]int{"list": 0, "add": 1, "show": 1, "member add": 2, "member remove": 2, "delete": 1}[cmd]
	if !ok {
		return fmt.Errorf("project: unknown command %q: list, add, show, member add, member remove or delete", cmd)
	}
	if len(pos) != want+1 {
		return fmt.Errorf("project %s: takes %d argument(s), got %d", cmd, want, len(pos)-1)
	}
	do := func(method, path string, in, out any) error {
		if err := restCall(ctx, cf, getenv, method, path, in, out); err != nil {
			return fmt.Errorf("project %s: %w", cmd, err)
		}
		return nil
	}
	path := func(id string) string { return "/agentik/projects/" + url.PathEscape(id) }
	switch cmd {
	case "list":
		var res protocol.ProjectsResult
		if err := do(http.MethodGet, "/agentik/projects", nil, &res); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tROLE\tMEMBERS\tAGENT")
		for _, p := range res.Projects {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", p.ID, p.Name, orDash(p.Role), len(p.Members), orDash(p.Agent))
		}
		return tw.Flush()
	case "add":
		in := agent.ProjectInput{Name: &pos[1]}
		if *instructions != "" {
			in.Instructions = instructions
		}
		if *ag != "" {
			in.Agent = ag
		}
		var p agent.Project
		if err := do(http.MethodPost, "/agentik/projects", in, &p); err != nil {
			return err
		}
		fmt.Fprintln(stdout, p.ID)
	case "show":
		var p agent.Project
		if err := do(http.MethodGet, path(pos[1]), nil, &p); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
		fmt.Fprintf(tw, "id\t%s\nname\t%s\nowner\t%s\nyour role\t%s\nagent\t%s\nknowledge\t%s\n", p.ID, p.Name, p.Owner, orDash(p.Role), orDash(p.Agent), orDash(strings.Join(p.Knowledge, ", ")))
		if p.Instructions != "" {
			fmt.Fprintf(tw, "instructions\t%s\n", agent.Shorten(strings.ReplaceAll(p.Instructions, "\n", " "), 200))
		}
		for _, m := range p.Members {
			fmt.Fprintf(tw, "member\t%s (%s)\n", m.UserID, m.Role)
		}
		return tw.Flush()
	case "member add", "member remove":
		var p agent.Project
		if err := do(http.MethodGet, path(pos[1]), nil, &p); err != nil {
			return err
		}
		user := pos[2]
		m := agent.ProjectMember{UserID: user, Role: *role}
		if strings.Contains(user, "@") {
			m = agent.ProjectMember{Email: user, Role: *role}
		}
		members := slices.DeleteFunc(p.Members, func(x agent.ProjectMember) bool { return x.UserID == user })
		if cmd == "member remove" {
			if len(members) == len(p.Members) && m.Email == "" {
				return fmt.Errorf("project member remove: %s is not a member of %s", user, p.ID)
			}
			if m.Email != "" {
				return errors.New("project member remove: name the member by their user id (agentik project show ID lists them)")
			}
		} else {
			members = append(members, m)
		}
		if err := do(http.MethodPatch, path(pos[1]), agent.ProjectInput{Members: &members}, &p); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s has %d member(s)\n", p.ID, len(p.Members))
	case "delete":
		if err := do(http.MethodDelete, path(pos[1]), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "deleted %s\n", pos[1])
	}
	return nil
}

// orDash is s, or "-" for nothing.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
