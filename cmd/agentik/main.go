// Command agentik runs the agent runtime: conversations with an
// OpenAI-compatible model, MCP tools, a durable event log, and the REST,
// SSE, WebSocket and browser surfaces. `agentik --help` lists the settings.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

func main() {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if len(os.Args) > 1 && os.Args[1] == "chat" {
		sigs = sigs[1:] // chat handles Ctrl-C itself: it interrupts a turn, or quits at the prompt
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentik:", err)
		os.Exit(1)
	}
}

// helpOut is where a flag set prints its usage: stdout when help was asked
// for (so `agentik --help | less` works), stderr for a usage error.
func helpOut(args []string, stdout, stderr io.Writer) io.Writer {
	for _, a := range args {
		switch a {
		case "--":
			return stderr
		case "-h", "-help", "--help", "-h=true", "-help=true", "--help=true":
			return stdout
		}
	}
	return stderr
}

// version names the build: module version, VCS revision and Go version.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "agentik (unknown version)"
	}
	v := "agentik " + bi.Main.Version
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		v += " " + rev[:min(12, len(rev))]
		if dirty {
			v += "-dirty"
		}
	}
	return v + " " + bi.GoVersion
}
