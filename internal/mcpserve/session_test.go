package mcpserve

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
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

// An approval asked of a 2025-11-25 client (elicitation/create on the
// call's stream) is named by the call's resume token, like its progress:
// a stream that breaks after it resumes the call.
func TestElicitationEventIsResumeToken(t *testing.T) {
	tok := resumeToken{Conv: "c1", Turn: 3, Seq: 9, ID: json.RawMessage("5")}.String()
	msg := `{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"_meta":{"` + resumeField + `":"` + tok + `"},"message":"approve?"}}`
	id, err := (&idOnly{}).StoreEvent(context.Background(), "s", "st", json.RawMessage(msg))
	if err != nil || id != tok {
		t.Fatalf("elicitation event id %q (%v), want its resume token", id, err)
	}
	if rt, ok := parseResume(id); !ok || rt.Conv != "c1" || rt.Seq != 9 || rt.Token != nil {
		t.Fatalf("the token of a call without a progress token: %+v %v", rt, ok)
	}
}

// 2026-07-28 beside 2025-11-25 on one endpoint: server/discover without a
// session lists both revisions and mints no session; a stateless request
// of a revision agentik does not serve is the revision's own error listing
// the supported ones; a notifications/cancelled without session or _meta
// (as the Go SDK sends it) is accepted, not a 400 that ends the client's
// connection.
func TestStatelessRequests(t *testing.T) {
	h := New(Config{Agents: func(context.Context) ([]Agent, error) { return nil, nil }})
	modern := func(version, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Protocol-Version", version)
		var m struct{ Method string }
		_ = json.Unmarshal([]byte(body), &m)
		r.Header.Set("Mcp-Method", m.Method)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	meta := func(v string) string {
		return `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v + `","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	}
	w := modern("2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta("2026-07-28")+`}}`)
	var disc struct {
		Result struct {
			SupportedVersions []string `json:"supportedVersions"`
		} `json:"result"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &disc); err != nil || w.Code != http.StatusOK || w.Header().Get("Mcp-Session-Id") != "" ||
		!slices.Contains(disc.Result.SupportedVersions, "2026-07-28") || !slices.Contains(disc.Result.SupportedVersions, "2025-11-25") {
		t.Fatalf("server/discover: %d %s (session %q)", w.Code, w.Body, w.Header().Get("Mcp-Session-Id"))
	}
	w = modern("2099-01-01", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+meta("2099-01-01")+`}}`)
	var bad struct {
		Error struct {
			Code int `json:"code"`
			Data struct {
				Supported []string `json:"supported"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &bad); err != nil || w.Code != http.StatusBadRequest || bad.Error.Code != mcp.UNSUPPORTED_PROTOCOL_VERSION ||
		!slices.Contains(bad.Error.Data.Supported, "2026-07-28") {
		t.Fatalf("an unsupported revision: %d %s", w.Code, w.Body)
	}
	if w = modern("2026-07-28", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"context canceled"}}`); w.Code != http.StatusAccepted {
		t.Fatalf("a cancellation without session or _meta: %d %s, want 202", w.Code, w.Body)
	}
}
