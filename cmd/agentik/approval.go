package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/client"
	"github.com/agentik/agentik/internal/protocol"
)

// askApproval asks at the terminal whether a waiting tool call may run:
// y approves, n denies (with an optional reason), e approves with edited
// arguments. A decision made elsewhere first (conflict) ends the question;
// Ctrl-C or the end of stdin leaves the call waiting.
func askApproval(ctx context.Context, c *client.Client, convID string, e *agent.Event, answers <-chan string, out io.Writer) {
	read := prompter(ctx, answers, out)
	for {
		line, ok := read(fmt.Sprintf("\n[approve %s %s? y/n/e] ", stripControls(e.Name), stripControls(oneLine(e.Arguments, 200))))
		if !ok {
			return
		}
		cmd := protocol.Command{Op: protocol.OpApprove, ConversationID: convID, CallID: e.CallID}
		switch strings.ToLower(line) {
		case "y", "yes":
			cmd.Decision = agent.DecisionApprove
		case "n", "no":
			cmd.Decision = agent.DecisionDeny
			if cmd.Reason, ok = read("reason (optional): "); !ok {
				return
			}
		case "e", "edit":
			args, ok := read("arguments (a JSON object): ")
			if !ok {
				return
			}
			cmd.Decision, cmd.Arguments = agent.DecisionApprove, json.RawMessage(args)
		default:
			continue
		}
		err := c.Call(ctx, cmd, nil)
		if err == nil {
			return
		}
		fmt.Fprintln(out, "error:", err)
		var ae *agent.Error
		if errors.As(err, &ae) && (ae.Code == agent.CodeConflict || ae.Code == agent.CodeNotFound) {
			return // decided elsewhere, or no longer waiting
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// prompter asks at the terminal: it prints the prompt and returns the next
// line typed (trimmed), or false once ctx ends or the input closes.
func prompter(ctx context.Context, answers <-chan string, out io.Writer) func(prompt string) (string, bool) {
	return func(prompt string) (string, bool) {
		fmt.Fprint(out, prompt)
		select {
		case <-ctx.Done():
			return "", false
		case l, ok := <-answers:
			return strings.TrimSpace(l), ok
		}
	}
}
