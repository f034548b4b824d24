package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/client"
)

// chatInterruptTimeout bounds the interrupt sent on Ctrl-C and the wait
// for the turn's end.
const chatInterruptTimeout = 10 * time.Second

// runChat chats in the terminal: each line of stdin is a message, the
// answer streams to stdout. Ctrl-C (ctx cancelled) during a turn
// interrupts it, waits for its end and exits; at the prompt it exits.
func runChat(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentik chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf clientFlags
	cf.register(fs, getenv)
	temp := fs.Bool("temp", false, "a temporary conversation, never stored")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: agentik chat [--server URL] [--temp] [CONVERSATION_ID]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("chat: at most one conversation id, got %d arguments", fs.NArg())
	}
	c, err := client.Dial(ctx, cf.config(getenv))
	if err != nil {
		return fmt.Errorf("chat: %w", err)
	}
	defer c.Close()

	var conv agent.Conversation
	if id := fs.Arg(0); id != "" {
		if conv, err = c.Conversation(ctx, id); err != nil {
			return fmt.Errorf("chat: %w", err)
		}
		if err := printHistory(ctx, c, conv.ID, stdout); err != nil {
			return err
		}
	} else if conv, err = c.CreateConversation(ctx, "", *temp); err != nil {
		return fmt.Errorf("chat: %w", err)
	}
	fmt.Fprintf(stderr, "conversation %s (Ctrl-C interrupts a turn, Ctrl-D or Ctrl-C at the prompt quits)\n", conv.ID)

	sub, err := c.Subscribe(ctx, client.Stream{Kind: client.StreamConversation, ConversationID: conv.ID}, -1)
	if err != nil {
		return fmt.Errorf("chat: subscribe: %w", err)
	}
	defer sub.Close()

	// The line reader ends when stdin does. It is the one goroutine runChat
	// does not wait for: a read from a terminal cannot be cancelled, and on
	// Ctrl-C at the prompt the process exits right after run returns.
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 64<<10), agent.MaxTextBytes)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()

	for {
		fmt.Fprint(stdout, "> ")
		var line string
		select {
		case <-ctx.Done():
			fmt.Fprintln(stdout)
			return nil
		case l, ok := <-lines:
			if !ok {
				fmt.Fprintln(stdout)
				return nil
			}
			line = l
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		res, err := c.Send(ctx, conv.ID, []agent.Content{agent.Text(line)}, agent.NewID())
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			fmt.Fprintln(stderr, "error:", err)
			continue
		}
		if err := streamTurn(ctx, c, sub, conv.ID, res.MessageID, stdout); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// streamTurn prints the turn that starts with message id until its end.
// When ctx ends first, it interrupts the turn and prints the rest.
func streamTurn(ctx context.Context, c *client.Client, sub *client.Sub, convID, messageID string, out io.Writer) error {
	p := &turnPrinter{w: out}
	seen := false
	wait := ctx
	for {
		ev, err := sub.Next(wait)
		if err != nil && wait == ctx && ctx.Err() != nil {
			// Ctrl-C: stop the turn, then show how it ended.
			ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), chatInterruptTimeout)
			defer cancel()
			if _, err := c.Interrupt(ictx, convID); err != nil {
				return fmt.Errorf("chat: interrupt: %w", err)
			}
			wait = ictx
			continue
		}
		if err != nil {
			return fmt.Errorf("chat: %w", err)
		}
		e := ev.Event
		if e == nil {
			continue
		}
		if e.Type == agent.EventMessage && e.Message != nil && e.Message.ID == messageID {
			seen = true
			continue
		}
		if !seen {
			continue // the end of an earlier turn
		}
		p.print(e)
		if e.Type == agent.EventEnd {
			return nil
		}
	}
}

// turnPrinter renders live events as plain text.
type turnPrinter struct {
	w     io.Writer
	phase string
}

func (p *turnPrinter) print(e *agent.Event) {
	switch e.Type {
	case agent.EventStartReasoning:
		fmt.Fprint(p.w, "[thinking] ")
		p.phase = e.Type
	case agent.EventStartResponse:
		if p.phase == agent.EventStartReasoning {
			fmt.Fprintln(p.w)
		}
		p.phase = e.Type
	case agent.EventAppendText:
		fmt.Fprint(p.w, e.Text)
	case agent.EventAppendImage:
		fmt.Fprintf(p.w, "[image %s, %d bytes base64]", e.Mime, len(e.Data))
	case agent.EventToolCall:
		fmt.Fprintf(p.w, "\n[tool %s %s]\n", e.Name, e.Arguments)
		p.phase = ""
	case agent.EventToolResult:
		mark := "result"
		if e.IsError {
			mark = "tool error"
		}
		fmt.Fprintf(p.w, "[%s: %s]\n", mark, oneLine(e.Result, 200))
	case agent.EventError:
		fmt.Fprintf(p.w, "\nerror: %s\n", e.Error)
	case agent.EventInterrupted:
		fmt.Fprint(p.w, "\n[interrupted]")
	case agent.EventEnd:
		if e.Usage != nil {
			fmt.Fprintf(p.w, "\n(%d tokens)\n", e.Usage.TotalTokens)
		} else {
			fmt.Fprintln(p.w)
		}
	}
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// printHistory prints a conversation's stored messages.
func printHistory(ctx context.Context, c *client.Client, id string, out io.Writer) error {
	for offset := 0; ; offset += agent.MaxPageSize {
		ms, err := c.Messages(ctx, agent.MessageQuery{ConversationID: id, Offset: offset, Limit: agent.MaxPageSize})
		if err != nil {
			return fmt.Errorf("chat: history: %w", err)
		}
		for _, m := range ms {
			switch m.Type {
			case agent.MessageUser:
				fmt.Fprintf(out, "> %s\n", contentText(m.Content))
			case agent.MessageAssistant:
				fmt.Fprintf(out, "%s\n", contentText(m.Content))
			case agent.MessageToolCall:
				fmt.Fprintf(out, "[tool %s %s]\n", m.Name, m.Arguments)
			case agent.MessageToolResult:
				fmt.Fprintf(out, "[result: %s]\n", oneLine(m.Result, 200))
			case agent.MessageError:
				fmt.Fprintf(out, "error: %s\n", m.Error)
			}
		}
		if len(ms) < agent.MaxPageSize {
			return nil
		}
	}
}

func contentText(cs []agent.Content) string {
	var parts []string
	for _, c := range cs {
		switch c.Type {
		case agent.ContentText:
			parts = append(parts, c.Body)
		case agent.ContentImage:
			parts = append(parts, "[image "+c.Mime+"]")
		}
	}
	return strings.Join(parts, " ")
}
