package server_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/server"
)

// withTimeouts sets the server's body and idle timeouts.
func withTimeouts(body, idle time.Duration) rigOption {
	return func(_ *agent.Config, s *server.Config) { s.BodyTimeout, s.IdleTimeout = body, idle }
}

// configured serves ts.App again from an http.Server that Configure set up
// (the rig's httptest server has no connection timeouts).
func configured(t testing.TB, ts *testServer) string {
	t.Helper()
	hs := httptest.NewUnstartedServer(ts.App)
	ts.App.Configure(hs.Config)
	hs.Start()
	t.Cleanup(hs.Close)
	return hs.Listener.Addr().String()
}

// closedBy reads c until the server closes it; it fails when the server
// holds the connection past a generous bound (it should close at once
// after its short timeout).
func closedBy(t testing.TB, c net.Conn, what string) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: the server still holds the connection (read %q)", what, b)
	}
	return string(b)
}

// TestStalledBodyIsCutOff: a client that sends headers and part of a body,
// then stalls, is cut off once the body timeout passes.
func TestStalledBodyIsCutOff(t *testing.T) {
	ts := newTestServer(t, withTimeouts(50*time.Millisecond, time.Hour))
	c, err := net.Dial("tcp", configured(t, ts))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nkey=abc")
	closedBy(t, c, "stalled body")
}

// TestIdleKeepAliveIsClosed: a keep-alive connection that sends no next
// request is closed after the idle timeout.
func TestIdleKeepAliveIsClosed(t *testing.T) {
	ts := newTestServer(t, withTimeouts(time.Hour, 50*time.Millisecond))
	c, err := net.Dial("tcp", configured(t, ts))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	if got := closedBy(t, c, "idle keep-alive"); !strings.HasPrefix(got, "HTTP/1.1 200") {
		t.Errorf("response %q", got)
	}
}

// TestStreamsOutliveTimeouts: an SSE answer to /send (a request with a
// body) and a WebSocket both stream for longer than the body and idle
// timeouts.
func TestStreamsOutliveTimeouts(t *testing.T) {
	// Timeouts a loaded machine still meets for a request sent at once,
	// and streams several times longer.
	ts := newTestServer(t, withTimeouts(200*time.Millisecond, 200*time.Millisecond))
	addr := configured(t, ts)

	var conv agent.Conversation
	postJSONTo(t, "http://"+addr+"/agentik/conversations", `{}`, &conv)
	resp, err := http.Post("http://"+addr+"/agentik/conversations/"+conv.ID+"/send", "application/json",
		strings.NewReader(`{"content":[{"type":"text","body":"[[tokens=80 delay=10ms]]"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sawEnd := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"type":"end"`) {
			sawEnd = true
		}
	}
	if !sawEnd {
		t.Fatalf("the SSE answer to /send ended before its end event (err %v)", sc.Err())
	}

	ws := dialWSOpts(t, "ws://"+addr+"/agentik/ws", nil)
	defer ws.close()
	c := ws.create("", false)
	sub := ws.subscribe(map[string]any{"stream": "conversation", "conversation_id": c.ID})
	// Idle on the socket until both timeouts have provably passed: two
	// connections opened after it went idle are cut off by them.
	idle, stalled := dialTCP(t, addr), dialTCP(t, addr)
	io.WriteString(idle, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	io.WriteString(stalled, "POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nkey=abc")
	closedBy(t, idle, "idle keep-alive")
	closedBy(t, stalled, "stalled body")
	ws.send(c.ID, "[[tokens=80 delay=10ms]]")
	ws.collect(sub.Sub, endCount(1))
}

func postJSONTo(t testing.TB, url, body string, out any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

func dialTCP(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
