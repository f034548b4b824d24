package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/client"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// tailLines runs `agentik tail` as a process and returns its stdout lines.
func tailLines(t *testing.T, args ...string) (<-chan string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"tail"}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1<<16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("tail stderr:\n%s", stderr.String())
		}
	})
	return lines, cmd
}

// untilEnd reads tail lines until the end of the turn of message id.
func untilEnd(t *testing.T, lines <-chan string, messageID string, got *[]string) {
	t.Helper()
	mine := false
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("tail ended")
			}
			*got = append(*got, l)
			var ev agent.AllEvent
			if err := json.Unmarshal([]byte(l), &ev); err != nil {
				t.Fatalf("tail printed %q: %v", l, err)
			}
			if e := ev.Event; e != nil && e.Type == agent.EventMessage && e.Message.ID == messageID {
				mine = true
			}
			if mine && ev.Event != nil && ev.Event.Type == agent.EventEnd {
				return
			}
		case <-timeout:
			t.Fatal("no end of turn on tail")
		}
	}
}

func sendVia(t *testing.T, addr, convID, text string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Config{URL: "http://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if convID == "" {
		conv, err := c.CreateConversation(ctx, "tail", false)
		if err != nil {
			t.Fatal(err)
		}
		convID = conv.ID
	}
	res, err := c.Send(ctx, convID, []agent.Content{agent.Text(text)}, agent.NewID())
	if err != nil {
		t.Fatal(err)
	}
	return convID + " " + res.MessageID
}

// storedEvents reads the whole log through the REST replay route.
func storedEvents(t *testing.T, addr string) []string {
	t.Helper()
	var out []string
	after := ""
	for {
		resp, err := http.Get("http://" + addr + "/agentik/events/replay?limit=1000&after_id=" + after)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var page struct {
			Events      []json.RawMessage `json:"events"`
			NextAfterID string            `json:"next_after_id"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			t.Fatalf("replay: %v: %s", err, b)
		}
		for _, e := range page.Events {
			out = append(out, string(e))
		}
		if len(page.Events) < 1000 {
			return out
		}
		after = page.NextAfterID
	}
}

func TestTailAcrossServerRestart(t *testing.T) {
	_, fakeURL := llmtest.NewHTTPServer(t)
	db := filepath.Join(t.TempDir(), "agentik.db")
	addr := freeAddr(t)
	env := "OPENAI_BASE_URL=" + fakeURL
	p1 := start(t, addr, db, env)
	lines, tail := tailLines(t, "--server", "http://"+addr, "--after", "0")

	var got []string
	ids := strings.Fields(sendVia(t, addr, "", "[[tokens=40]] before the restart"))
	conv := ids[0]
	untilEnd(t, lines, ids[1], &got)

	// A graceful stop closes the socket with 1012; tail reconnects.
	if err := p1.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = p1.cmd.Wait()
	// While the server is down, tail retries: the port refuses it, then
	// answers with a listener that drops the connection; once tail has
	// tried there, the server comes back on the same port.
	down, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = down.(*net.TCPListener).SetDeadline(time.Now().Add(testwait.Timeout)) // a bound for a broken tail
	c, err := down.Accept()
	if err != nil {
		t.Fatalf("tail did not retry while the server was down: %v", err)
	}
	c.Close()
	down.Close()
	start(t, addr, db, env)
	ids = strings.Fields(sendVia(t, addr, conv, "[[tokens=40]] after the restart"))
	untilEnd(t, lines, ids[1], &got)

	want := storedEvents(t, addr)
	if len(got) != len(want) {
		t.Fatalf("tail printed %d events, the log has %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal([]byte(got[i]), []byte(want[i])) {
			t.Fatalf("event %d:\n tail %s\n  log %s", i, got[i], want[i])
		}
	}
	// Ctrl-C ends tail cleanly.
	if err := tail.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := tail.Wait(); err != nil {
		t.Fatalf("tail exit: %v", err)
	}
}
