package server_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// TestAfterAcceptsATime: ?after= on /messages and the SSE event routes
// also takes an RFC 3339 time, meaning the first seq at or after it.
func TestAfterAcceptsATime(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	w := dialWS(t, ts)
	defer w.close()
	c := w.create("", false)
	sub := w.subscribe(map[string]any{"stream": "conversation", "conversation_id": c.ID})
	w.send(c.ID, "first")
	w.collect(sub.Sub, turnEnds(c.ID))
	w.send(c.ID, "second")
	w.collect(sub.Sub, turnEnds(c.ID))

	var all struct{ Messages []agent.Message }
	getJSONFrom(t, ts.URL+"/agentik/conversations/"+c.ID+"/messages", &all)
	if len(all.Messages) != 4 {
		t.Fatalf("%d messages, want 4", len(all.Messages))
	}
	second := all.Messages[2]
	at := second.Date.UTC().Format(time.RFC3339Nano)

	var since struct{ Messages []agent.Message }
	getJSONFrom(t, ts.URL+"/agentik/conversations/"+c.ID+"/messages?after="+url.QueryEscape(at), &since)
	if len(since.Messages) != 2 || since.Messages[0].ID != second.ID {
		t.Fatalf("messages after %s: %+v, want the second exchange", at, since.Messages)
	}

	resp, err := http.Get(ts.URL + "/agentik/conversations/" + c.ID + "/events?after=" + url.QueryEscape(at))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("events after a time: %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			if id != jsonInt(second.Seq) {
				t.Fatalf("first event after %s has seq %s, want %d (the second user message)", at, id, second.Seq)
			}
			return
		}
	}
	t.Fatal("no event")
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

func getJSONFrom(t testing.TB, url string, out any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}
