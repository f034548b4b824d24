package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// syncBuffer is an io.Writer that tests can read while chat writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitFor(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	testwait.For(t, fmt.Sprintf("%q in the output", want), func() bool { return strings.Contains(out.String(), want) })
}

func TestChatStreamsAndInterrupts(t *testing.T) {
	t.Parallel()
	_, fakeURL := llmtest.NewHTTPServer(t)
	addr := freeAddr(t)
	start(t, addr, t.TempDir()+"/agentik.db", "OPENAI_BASE_URL="+fakeURL)
	getenv := func(k string) string {
		if k == "AGENTIK_URL" {
			return "http://" + addr
		}
		return ""
	}

	// A turn streams to stdout; the end of stdin ends the chat.
	stdin, w := io.Pipe()
	var out, errs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runChat(ctx, nil, getenv, stdin, &out, &errs, nil) }()
	if _, err := io.WriteString(w, "hello chat\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &out, "You said: hello chat")
	id := strings.Fields(strings.TrimPrefix(errs.String(), "conversation "))[0]

	// Ctrl-C in the middle of a long answer interrupts the turn.
	if _, err := io.WriteString(w, "[[tokens=100000 delay=1ms]]\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &out, "t20 ")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "[interrupted]") {
		t.Fatalf("no [interrupted] in:\n%s", out.String())
	}
	w.Close()

	// Reopening the conversation prints its history.
	stdin2 := strings.NewReader("")
	var out2, errs2 syncBuffer
	if err := runChat(context.Background(), []string{id}, getenv, stdin2, &out2, &errs2, nil); err != nil {
		t.Fatal(err)
	}
	if h := out2.String(); !strings.Contains(h, "> hello chat\nYou said: hello chat\n") {
		t.Fatalf("history:\n%s", h)
	}
}
