package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/agentik/agentik/internal/client"
)

// clientFlags are the flags every client subcommand shares.
type clientFlags struct {
	server string
	stderr io.Writer // where a REST command says it waits for the server to start
}

func (f *clientFlags) register(fs *flag.FlagSet, getenv func(string) string, stderr io.Writer) {
	f.stderr = stderr
	def := getenv("AGENTIK_URL")
	if def == "" {
		def = client.DefaultURL
	}
	fs.StringVar(&f.server, "server", def, "server URL (env AGENTIK_URL)")
}

func (f *clientFlags) config(getenv func(string) string) client.Config {
	return client.Config{URL: f.server, APIKey: getenv("AGENTIK_API_KEY")}
}

// runTail prints events as JSON lines, one AllEvent per line exactly as
// the server sent it, until ctx ends. It reconnects and resumes by itself,
// so a server restart loses and repeats nothing.
func runTail(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentik tail", flag.ContinueOnError)
	fs.SetOutput(helpOut(args, stdout, stderr))
	var cf clientFlags
	cf.register(fs, getenv, stderr)
	after := fs.Int64("after", -1, "replay stored events after this seq first (0: from the beginning); default: only new events")
	conv := fs.String("conversation", "", "only this conversation's events")
	agentOnly := fs.Bool("agent", false, "only agent events (created, renamed, deleted…)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: agentik tail [--server URL] [--after N] [--conversation ID | --agent]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("tail: unexpected argument %q", fs.Arg(0))
	}
	stream := client.Stream{Kind: client.StreamAll}
	switch {
	case *conv != "" && *agentOnly:
		return errors.New("tail: --conversation and --agent exclude each other")
	case *conv != "":
		stream = client.Stream{Kind: client.StreamConversation, ConversationID: *conv}
	case *agentOnly:
		stream.Kind = client.StreamAgent
	}
	ccfg := cf.config(getenv)
	c, err := client.Dial(ctx, ccfg)
	if err != nil {
		return dialError("tail", cf.server, ccfg.APIKey != "", err)
	}
	defer c.Close()
	sub, err := c.Subscribe(ctx, stream, *after)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("tail: subscribe: %w", err)
	}
	defer sub.Close()
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("tail: %w", err)
		}
		line := append(escapeControls(ev.JSON), '\n')
		if _, err := stdout.Write(line); err != nil {
			return fmt.Errorf("tail: write: %w", err)
		}
	}
}

// parseInterleaved parses fs's flags wherever they stand among args and
// returns the other arguments in order (a subcommand and its operands):
// `agentik schedule --server URL list` and `agentik schedule list --server
// URL` alike. flag.ErrHelp when help was asked for.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
