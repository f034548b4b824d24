package server_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/server"
)

type recordedRequest struct {
	route  string
	status int
}

type observer struct{ reqs chan recordedRequest }

func (o observer) Request(route string, status int, _ time.Duration) {
	o.reqs <- recordedRequest{route, status}
}
func (o observer) StreamOpened(string) func() { return func() {} }

func withMetrics(o server.Observer) rigOption {
	return func(_ *agent.Config, s *server.Config) {
		s.Observer = o
		s.Metrics = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "up 1\n") })
	}
}

// /metrics is behind the API keys, and requests rejected by the guard are
// still observed under their route pattern.
func TestMetricsBehindKeys(t *testing.T) {
	t.Parallel()
	o := observer{reqs: make(chan recordedRequest, 10)}
	ts := newTestServer(t, withKeys("k1"), withMetrics(o))
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	// Without a key a scraper gets a 401 it can read, not the sign-in page.
	for _, c := range []struct {
		key  string
		want int
	}{{"", http.StatusUnauthorized}, {"k1", 200}} {
		req, _ := http.NewRequest("GET", ts.URL+"/metrics", nil)
		if c.key != "" {
			req.Header.Set("Authorization", "Bearer "+c.key)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want || (c.want != 200) == (string(b) == "up 1\n") {
			t.Errorf("GET /metrics with key %q: %d %q, want %d", c.key, resp.StatusCode, b, c.want)
		}
		if got := <-o.reqs; got != (recordedRequest{"GET /metrics", c.want}) {
			t.Errorf("observed %+v", got)
		}
	}
	resp := ts.do(t, "GET", "/no/such/page", "", "Authorization", "Bearer k1")
	resp.Body.Close()
	if got := <-o.reqs; got.route != "unmatched" {
		t.Errorf("a path no route matches was observed as %q", got.route)
	}
}

func TestMetricsOffIsNotFound(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withoutMetrics())
	resp := ts.do(t, "GET", "/metrics", "")
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("GET /metrics without metrics: %d, want 404", resp.StatusCode)
	}
}

// streamObserver records requests and counts ended streams.
type streamObserver struct {
	observer
	ended chan string
}

func (o streamObserver) StreamOpened(kind string) func() {
	return func() { o.ended <- kind }
}

// TestWSObservedWhenItEnds: a WebSocket is served on after its handler
// returns (handover.go); it is reported, 101 and its stream's end, when it
// closes, not when the upgrade is done.
func TestWSObservedWhenItEnds(t *testing.T) {
	t.Parallel()
	o := streamObserver{observer{reqs: make(chan recordedRequest, 10)}, make(chan string, 10)}
	ts := newTestServer(t, withMetrics(o))
	ws := dialWS(t, ts)
	ws.write(`{"op":"ping","id":"1"}`)
	if f, err := ws.readFrame(); err != nil || !f.OK {
		t.Fatalf("ping: %+v %v", f, err)
	}
	select {
	case got := <-o.reqs:
		t.Fatalf("reported while open: %+v", got)
	case kind := <-o.ended:
		t.Fatalf("stream %q ended while open", kind)
	default:
	}
	ws.c.CloseNow()
	if kind := <-o.ended; kind != "ws" {
		t.Errorf("ended stream %q, want ws", kind)
	}
	if got := <-o.reqs; got != (recordedRequest{"GET /agentik/ws", 101}) {
		t.Errorf("observed %+v", got)
	}
}
