package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/store"
)

// AGENTIK_STORE_MODE and --store-mode choose the store's mode (the flag
// wins); anything but fast or plain fails the start with a message naming
// the variable.
func TestStoreModeSetting(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		env  string
		args []string
		want store.Mode
		err  string
	}{
		{"", nil, store.ModeFast, ""},
		{"plain", nil, store.ModePlain, ""},
		{"fast", []string{"--store-mode", "plain"}, store.ModePlain, ""},
		{"plain", []string{"--store-mode=fast"}, store.ModeFast, ""},
		{"turbo", nil, "", "AGENTIK_STORE_MODE (--store-mode) must be fast or plain"},
	} {
		c, err := parseConfig(tt.args, func(k string) string {
			if k == "AGENTIK_STORE_MODE" {
				return tt.env
			}
			return ""
		}, io.Discard)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("AGENTIK_STORE_MODE=%q %v: err %v, want %q", tt.env, tt.args, err, tt.err)
		case tt.err == "" && (err != nil || c.StoreMode != tt.want):
			t.Errorf("AGENTIK_STORE_MODE=%q %v: mode %q, %v; want %q", tt.env, tt.args, c.StoreMode, err, tt.want)
		}
	}
}

// The real binary killed (kill -9) mid-answer in one store mode starts
// again in the other: the answer the client saw is kept and marked
// interrupted, every event it received is in the log once and in order
// (in plain mode the fast mode's delta log is folded into the database and
// removed; in fast mode the run indexes find what plain mode wrote), and a
// next turn runs.
func TestKilledThenTheOtherStoreMode(t *testing.T) {
	t.Parallel()
	for _, way := range [][2]string{{"fast", "plain"}, {"plain", "fast"}} {
		t.Run(way[0]+"-then-"+way[1], func(t *testing.T) {
			t.Parallel()
			fake, fakeURL := llmtest.NewHTTPServer(t)
			hold := make(chan struct{})
			t.Cleanup(func() { close(hold) })
			var words []string
			for i := range 60 {
				words = append(words, fmt.Sprintf("w%d ", i))
			}
			fake.Enqueue(llmtest.Reply{Text: strings.Join(words, ""), ChunkSize: 4, Hold: hold, HoldAfter: 40})
			db := filepath.Join(t.TempDir(), "agentik.db")
			addr := freeAddr(t)
			// No continuation: the turn the kill cut ends interrupted, and
			// the answer the client saw is what the other mode must read.
			env := []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_TURN_CONTINUATIONS=0"}
			p := start(t, addr, db, append(env, "AGENTIK_STORE_MODE="+way[0])...)
			var c agent.Conversation
			postJSON(t, p.url("/agentik/conversations"), `{}`, &c)
			resp, err := http.Post(p.url("/agentik/conversations/"+c.ID+"/send"), "application/json", strings.NewReader(`{"content":[{"type":"text","body":"talk"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			seen := map[string]bool{}
			var saw strings.Builder
			sc := bufio.NewScanner(resp.Body)
			for !strings.Contains(saw.String(), "w39 ") && sc.Scan() {
				if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
					seen[id] = true
				}
				if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
					var ev agent.Event
					if json.Unmarshal([]byte(data), &ev) == nil && ev.Type == agent.EventAppendText {
						saw.WriteString(ev.Text)
					}
				}
			}
			if !strings.Contains(saw.String(), "w39 ") {
				t.Fatalf("the stream ended before the held answer's first 40 chunks: %q", saw.String())
			}
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = p.cmd.Wait()

			// The flag, over the variable naming the first mode.
			p = startArgs(t, addr, db, []string{"--store-mode", way[1]}, append(env, "AGENTIK_STORE_MODE="+way[0])...)
			if _, err := os.Stat(db + "-deltas"); way[1] == "plain" && !os.IsNotExist(err) {
				t.Errorf("plain mode left the delta log beside the database (%v)", err)
			}
			var hist struct{ Messages []agent.Message }
			getJSON(t, p.url("/agentik/conversations/"+c.ID+"/messages"), &hist)
			n := len(hist.Messages)
			if n < 2 || hist.Messages[n-1].Code != agent.CodeInterruptedByRestart {
				t.Fatalf("after the restart the history is %+v", hist.Messages)
			}
			if partial := hist.Messages[n-2]; partial.Type != agent.MessageAssistant || len(partial.Content) == 0 || !strings.HasPrefix(partial.Content[0].Body, saw.String()) {
				t.Fatalf("the answer the client saw (%q) is not kept: %+v", saw.String(), partial)
			}
			var page struct{ Events []agent.AllEvent }
			getJSON(t, p.url("/agentik/conversations/"+c.ID+"/events/replay?limit=1000"), &page)
			stored := map[string]bool{}
			for i, e := range page.Events {
				if stored[fmt.Sprint(e.Seq)] || (i > 0 && e.Seq <= page.Events[i-1].Seq) {
					t.Fatalf("event %d (seq %d) is repeated or out of order", i, e.Seq)
				}
				stored[fmt.Sprint(e.Seq)] = true
			}
			for seq := range seen {
				if !stored[seq] {
					t.Errorf("event %s was delivered before the kill but is not in the log read in %s mode", seq, way[1])
				}
			}
			fake.Enqueue(llmtest.Reply{Text: "again"})
			postJSON(t, p.url("/agentik/conversations/"+c.ID+"/send"), `{"content":[{"type":"text","body":"more"}]}`, nil) // the stream, to the turn's end
			getJSON(t, p.url("/agentik/conversations/"+c.ID+"/messages"), &hist)
			if last := hist.Messages[len(hist.Messages)-1]; last.Type != agent.MessageAssistant || len(last.Content) == 0 || last.Content[0].Body != "again" {
				t.Errorf("the next turn in %s mode answered %+v", way[1], last)
			}
		})
	}
}
