// Command agentik-bench measures agentik end to end, the way its users
// load it: it builds and starts the real server (a child process, so its
// CPU and memory are read from /proc apart from the load), with the fake
// OpenAI-compatible model of internal/llm/llmtest in this process, drives
// it with real WebSocket and SSE clients on 127.0.0.1, and sets every
// figure beside a bare baseline measured in the same run. Machines are
// shared and noisy: the ratios are the result.
//
//	go run ./cmd/agentik-bench            default run (under five minutes; -run all adds saturation)
//	go run ./cmd/agentik-bench -quick     short run (under a minute)
//	go run ./cmd/agentik-bench -json out.json -run relay,mix
//	go run ./cmd/agentik-bench -run soak -soak-duration 20m   the soak runs only when named
//
// Progress goes to stderr, the table to stdout. docs/BENCHMARKS.md
// describes each scenario and its baseline.
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
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentik-bench:", err)
		os.Exit(1)
	}
}
