// Command agentik runs the agent runtime: conversations with an
// OpenAI-compatible model, MCP tools, a durable event log, and the REST,
// SSE, WebSocket and browser surfaces. `agentik --help` lists the settings.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentik:", err)
		os.Exit(1)
	}
}
