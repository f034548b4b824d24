package mcpserve

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func post(t *testing.T, h http.Handler, session, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		r.Header.Set("Mcp-Session-Id", session)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// A request other than initialize without a session is a 400 with a
// JSON-RPC error saying to initialize first; initialize itself, and a
// request of a session it was given, go through; an unknown session stays
// mcp-go's 404 (the transport's "your session ended").
func TestRequestWithoutSession(t *testing.T) {
	h := New(Config{Agents: func(context.Context) ([]Agent, error) { return nil, nil }})

	w := post(t, h, "", `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`)
	var got struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != http.StatusBadRequest ||
		got.ID != 7 || got.Error.Code != -32600 || !strings.Contains(got.Error.Message, "send initialize first") {
		t.Fatalf("tools/list without a session: %d %s (decode: %v), want 400 with a JSON-RPC error -32600 to initialize first", w.Code, w.Body, err)
	}

	w = post(t, h, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	session := w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d %s, session %q", w.Code, w.Body, session)
	}
	if w = post(t, h, session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"tools"`) {
		t.Fatalf("tools/list in its session: %d %s", w.Code, w.Body)
	}
	if w = post(t, h, "no-such-session", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); w.Code != http.StatusNotFound {
		t.Fatalf("tools/list in an unknown session: %d %s, want 404", w.Code, w.Body)
	}
}
