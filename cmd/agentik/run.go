package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/agentik/agentik/internal/app"
)

// run is the whole program; main only calls it.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] { // the client modes
		case "tail":
			return runTail(ctx, args[1:], getenv, stdout, stderr)
		case "chat":
			interrupts := make(chan os.Signal, 1)
			signal.Notify(interrupts, os.Interrupt)
			defer signal.Stop(interrupts)
			return runChat(ctx, args[1:], getenv, stdin, stdout, stderr, interrupts)
		case "export":
			return runExport(ctx, args[1:], getenv, stdout, stderr)
		case "import":
			return runImport(ctx, args[1:], getenv, stdout, stderr)
		case "user":
			return runUser(ctx, args[1:], getenv, stdout, stderr)
		case "group":
			return runGroup(ctx, args[1:], getenv, stdout, stderr)
		case "schedule":
			return runSchedule(ctx, args[1:], getenv, stdout, stderr)
		case "project":
			return runProject(ctx, args[1:], getenv, stdout, stderr)
		case "audit":
			return runAudit(ctx, args[1:], stdout, stderr)
		case "inbox":
			return runInbox(ctx, args[1:], getenv, stdout, stderr)
		case "version", "--version", "-version":
			fmt.Fprintln(stdout, version())
			return nil
		}
	}
	cfg, err := parseConfig(args, getenv, helpOut(args, stdout, stderr))
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	return app.Run(ctx, cfg, getenv, stderr)
}
