package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/client"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/web"
)

// The markers a terminal in bracketed-paste mode puts around a paste.
const (
	pasteStart = "\x1b[200~"
	pasteEnd   = "\x1b[201~"
)

// chatInterruptTimeout bounds the interrupt sent on Ctrl-C and the wait
// for the turn's end.
const chatInterruptTimeout = 10 * time.Second

// chatHelp documents agentik chat; --help prints it to stdout.
const chatHelp = `usage: agentik chat [--server URL] [--temp] [--model ID] [CONVERSATION_ID]

Chat with an agentik server in the terminal. Without an id, a new
conversation starts; with one, its history is printed and it goes on.

Input: Enter sends the line. For a message of several lines, end a line
with \ to go on to the next one, or type """ on a line of its own, the
lines, and """ again; a block pasted into a terminal is one message
(then Enter sends it).
/prompt lists the tool servers' prompts (MCP); /prompt NAME [ARG=VALUE …]
sends one (NAME or SERVER/NAME; a value with spaces in double quotes),
asking for each required argument not given.
Without AGENTIK_API_KEY, a server that needs a key refuses the chat (401).
Keys: Ctrl-C during an answer interrupts it (the chat goes on); Ctrl-C or
Ctrl-D at the prompt quits.
While the server cannot be reached, a notice says so; the chat reconnects
by itself and resumes the answer where it was.

Flags:
`

// runChat chats in the terminal: each message read from stdin (see
// chatHelp) is sent, the answer streams to stdout. A value on interrupts
// (Ctrl-C) during a turn interrupts it and the chat goes on; at the prompt
// it quits. ctx ending (SIGTERM) interrupts a running turn and quits.
func runChat(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer, interrupts <-chan os.Signal) error {
	fs := flag.NewFlagSet("agentik chat", flag.ContinueOnError)
	fs.SetOutput(helpOut(args, stdout, stderr))
	var cf clientFlags
	cf.register(fs, getenv, stderr)
	temp := fs.Bool("temp", false, "a temporary conversation, never stored")
	model := fs.String("model", "", "the model, as <provider>/<model> (GET /agentik/models lists them); with an id, the conversation switches to it")
	showVersion := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), chatHelp)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *showVersion {
		fmt.Fprintln(stdout, version())
		return nil
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("chat: at most one conversation id, got %d arguments", fs.NArg())
	}
	ccfg := cf.config(getenv)
	ccfg.Logger = slog.New(&connNotice{w: stderr})
	c, err := client.Dial(ctx, ccfg)
	if err != nil {
		return dialError("chat", cf.server, ccfg.APIKey != "", err)
	}
	defer c.Close()

	var conv agent.Conversation
	var settings protocol.SettingsFields
	if *model != "" {
		settings.Model = model
	}
	if id := fs.Arg(0); id != "" {
		if conv, err = c.Conversation(ctx, id); err != nil {
			return fmt.Errorf("chat: %w", err)
		}
		if *model != "" {
			if conv, err = c.UpdateConversation(ctx, id, settings); err != nil {
				return fmt.Errorf("chat: %w", err)
			}
		}
		if err := printHistory(ctx, c, conv.ID, stdout); err != nil {
			return err
		}
	} else if conv, err = c.CreateConversationWith(ctx, "", *temp, settings); err != nil {
		return fmt.Errorf("chat: %w", err)
	}
	fmt.Fprintf(stderr, "conversation %s (Ctrl-C interrupts an answer, Ctrl-D or Ctrl-C at the prompt quits; end a line with \\ or use \"\"\" for several lines)\n", conv.ID)

	sub, err := c.Subscribe(ctx, client.Stream{Kind: client.StreamConversation, ConversationID: conv.ID}, -1)
	if err != nil {
		return fmt.Errorf("chat: subscribe: %w", err)
	}
	defer sub.Close()

	// The message reader ends when stdin does. It is the one goroutine
	// runChat does not wait for: a read from a terminal cannot be
	// cancelled, and on Ctrl-C at the prompt the process exits right after
	// run returns.
	// A terminal pastes a block of lines as one message (bracketed paste).
	if f, ok := stdin.(*os.File); ok {
		if restore := pasteMode(f, stdout); restore != nil {
			defer restore()
		}
	}
	msgs := make(chan string)
	go readMessages(ctx, stdin, msgs, func() { fmt.Fprint(stdout, "… ") })

	for {
		// A message read ahead (typed or pasted during the answer) is shown
		// after its prompt, so its answer starts on a line of its own.
		select {
		case m, ok := <-msgs:
			if !ok {
				fmt.Fprintln(stdout)
				return nil
			}
			if strings.TrimSpace(m) == "" {
				continue
			}
			fmt.Fprintf(stdout, "> %s\n", oneLine(m, 200))
			if err := sendAndStream(ctx, c, sub, conv.ID, m, stdout, stderr, interrupts, msgs); err != nil || ctx.Err() != nil {
				return err
			}
			continue
		default:
		}
		fmt.Fprint(stdout, "> ")
		var text string
		select {
		case <-ctx.Done():
			fmt.Fprintln(stdout)
			return nil
		case <-interrupts:
			fmt.Fprintln(stdout)
			return nil
		case m, ok := <-msgs:
			if !ok {
				fmt.Fprintln(stdout)
				return nil
			}
			text = m
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		if err := sendAndStream(ctx, c, sub, conv.ID, text, stdout, stderr, interrupts, msgs); err != nil || ctx.Err() != nil {
			return err
		}
	}
}

// sendAndStream sends text and prints its turn; a refused send is
// reported and the chat goes on.
func sendAndStream(ctx context.Context, c *client.Client, sub *client.Sub, convID, text string, stdout, stderr io.Writer, interrupts <-chan os.Signal, msgs <-chan string) error {
	content := []agent.Content{agent.Text(text)}
	if isPromptCommand(text) { // chatprompt.go
		var ok bool
		if content, ok = promptContent(ctx, c, text, stdout, stderr, msgs, interrupts); !ok {
			return nil
		}
	}
	res, err := c.Send(ctx, convID, content, agent.NewID())
	if err != nil {
		if ctx.Err() == nil {
			fmt.Fprintln(stderr, "error:", err)
		}
		return nil
	}
	return streamTurn(ctx, c, sub, convID, res.MessageID, stdout, interrupts, msgs)
}

// dialError says why a client command could not connect: a server that
// answered 401 wants a key (and names the variable that carries it),
// anything else is a server that cannot be reached.
func dialError(cmd, server string, haveKey bool, err error) error {
	var de *client.DialError
	if errors.As(err, &de) && de.Status == http.StatusUnauthorized {
		if haveKey {
			return fmt.Errorf("%s: the agentik server at %s refused the key in AGENTIK_API_KEY (401): it is unknown, revoked, or its user is disabled; set AGENTIK_API_KEY to a key of yours (an admin makes one with `agentik user key ID`)", cmd, server)
		}
		return fmt.Errorf("%s: the agentik server at %s needs an API key (401): set AGENTIK_API_KEY to a key of yours (an admin makes one with `agentik user key ID`, or one of the server's AGENTIK_API_KEYS)", cmd, server)
	}
	return fmt.Errorf("%s: cannot reach the agentik server at %s (start it with `agentik`, or pass --server): %w", cmd, server, err)
}

// readMessages sends each message of r to out, then closes it: a line, or
// lines joined while they end with a backslash, or the lines between two
// lines of """, or a bracketed paste. more is called before each
// continuation line.
func readMessages(ctx context.Context, r io.Reader, out chan<- string, more func()) {
	defer close(out)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), agent.MaxTextBytes)
	var lines []string
	block, paste := false, false
	for sc.Scan() {
		line := sc.Text()
		// A bracketed paste (ESC[200~ … ESC[201~) is one message, whatever
		// its lines say; it ends with the line the paste ends on.
		if i := strings.Index(line, pasteStart); i >= 0 && !block {
			line, paste = line[:i]+line[i+len(pasteStart):], true
		}
		if paste {
			end := strings.Index(line, pasteEnd)
			if end < 0 {
				lines = append(lines, line)
				more()
				continue
			}
			line, paste = line[:end]+line[end+len(pasteEnd):], false
			lines = append(lines, line)
			msg := strings.Join(lines, "\n")
			lines = lines[:0]
			select {
			case out <- msg:
			case <-ctx.Done():
				return
			}
			continue
		}
		switch {
		case block && strings.TrimSpace(line) == `"""`:
			block = false
		case block:
			lines = append(lines, line)
			more()
			continue
		case len(lines) == 0 && strings.TrimSpace(line) == `"""`:
			block = true
			more()
			continue
		case strings.HasSuffix(line, `\`):
			lines = append(lines, strings.TrimSuffix(line, `\`))
			more()
			continue
		default:
			lines = append(lines, line)
		}
		msg := strings.Join(lines, "\n")
		lines = lines[:0]
		select {
		case out <- msg:
		case <-ctx.Done():
			return
		}
	}
}

// connNotice is the chat client's log: it tells the user when the server
// cannot be reached and when it is back, and drops everything else.
type connNotice struct{ w io.Writer }

func (n *connNotice) Enabled(context.Context, slog.Level) bool { return true }
func (n *connNotice) WithAttrs([]slog.Attr) slog.Handler       { return n }
func (n *connNotice) WithGroup(string) slog.Handler            { return n }
func (n *connNotice) Handle(_ context.Context, r slog.Record) error {
	switch r.Message {
	case "client_disconnected":
		fmt.Fprintln(n.w, "\n[the server cannot be reached; reconnecting…]")
	case "client_reconnected":
		fmt.Fprintln(n.w, "[reconnected]")
	}
	return nil
}

// streamTurn prints the turn that starts with message id until its end.
// When ctx ends first, it interrupts the turn and prints the rest.
func streamTurn(ctx context.Context, c *client.Client, sub *client.Sub, convID, messageID string, out io.Writer, interrupts <-chan os.Signal, answers <-chan string) error {
	p := &turnPrinter{w: out}
	seen := false
	// wait is what Next waits under: the turn's context, cancelled by
	// ctx or by Ctrl-C; then, while the interrupt is sent and the end
	// awaited, a bounded one.
	turnCtx, cancelTurn := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-interrupts:
			cancelTurn()
		case <-turnCtx.Done():
		}
	}()
	defer func() { cancelTurn(); <-watched }()
	wait := turnCtx
	for {
		ev, err := sub.Next(wait)
		if err != nil && wait == turnCtx && turnCtx.Err() != nil {
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
		if e.Type == agent.EventApprovalRequest && wait == turnCtx {
			askApproval(turnCtx, c, convID, e, answers, out)
			continue
		}
		if e.Type == agent.EventElicitationRequest && wait == turnCtx {
			askElicitation(turnCtx, c, convID, e, answers, out) // elicit.go
			continue
		}
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
		fmt.Fprint(p.w, stripControls(e.Text))
	case agent.EventAppendImage:
		fmt.Fprintf(p.w, "[image %s, %d bytes base64]", stripControls(e.Mime), len(e.Data))
	case agent.EventToolCall:
		fmt.Fprintf(p.w, "\n[tool %s %s]\n", stripControls(e.Name), stripControls(e.Arguments))
		p.phase = ""
	case agent.EventToolResult:
		mark := "result"
		if e.IsError {
			mark = "tool error"
		}
		fmt.Fprintf(p.w, "[%s: %s]\n", mark, oneLine(e.Result, 200))
		for _, img := range e.Images {
			fmt.Fprintf(p.w, "[image %s, %d bytes base64]\n", stripControls(img.Mime), len(img.Data))
		}
	case agent.EventToolProgress:
		if pr := e.Progress; pr != nil {
			fmt.Fprintf(p.w, "[progress %s]\n", progressText(pr))
		}
	case agent.EventError:
		fmt.Fprintf(p.w, "\nerror: %s\n", stripControls(e.Error))
	case agent.EventInterrupted:
		fmt.Fprint(p.w, "\n[interrupted]")
	case agent.EventMessage:
		if m := e.Message; m != nil && m.Type == agent.MessageSummary {
			fmt.Fprintf(p.w, "\n%s\n", summaryLine(m))
		}
	case agent.EventEnd:
		if e.Usage != nil {
			fmt.Fprintf(p.w, "\n(%d tokens)\n", e.Usage.TotalTokens)
		} else {
			fmt.Fprintln(p.w)
		}
	}
}

// summaryLine reports a compaction of the conversation's context, its
// span named as the UI's divider names it.
func summaryLine(m *agent.Message) string {
	return fmt.Sprintf("[context compacted: %s; about %d → %d tokens]", stripControls(web.MessageSummaryLabel(m)), m.TokensBefore, m.TokensAfter)
}

// oneLine is s (control sequences stripped) on one line, cut after n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(stripControls(s)), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// printHistory prints a conversation's stored messages.
func printHistory(ctx context.Context, c *client.Client, id string, out io.Writer) error {
	for offset := 0; ; {
		p, err := c.History(ctx, agent.MessageQuery{ConversationID: id, Offset: offset, Limit: agent.MaxPageSize})
		if err != nil {
			return fmt.Errorf("chat: history: %w", err)
		}
		for _, m := range p.Messages {
			switch m.Type {
			case agent.MessageUser:
				fmt.Fprintf(out, "> %s\n", stripControls(contentText(m.Content)))
			case agent.MessageAssistant:
				fmt.Fprintf(out, "%s\n", stripControls(contentText(m.Content)))
			case agent.MessageToolCall:
				fmt.Fprintf(out, "[tool %s %s]\n", stripControls(m.Name), stripControls(m.Arguments))
			case agent.MessageToolResult:
				fmt.Fprintf(out, "[result: %s]\n", oneLine(m.Result, 200))
			case agent.MessageError:
				fmt.Fprintf(out, "error: %s\n", stripControls(m.Error))
			case agent.MessageSummary:
				fmt.Fprintf(out, "%s %s\n", summaryLine(&m), oneLine(m.Summary, 200))
			}
		}
		if p.NextOffset == 0 { // a page may end early at the server's byte bound
			return nil
		}
		offset = p.NextOffset
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
		case agent.ContentResource:
			parts = append(parts, "[resource "+c.URI+"]")
		}
	}
	return strings.Join(parts, " ")
}
