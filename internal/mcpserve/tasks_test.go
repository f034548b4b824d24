package mcpserve

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// postModern posts a 2026-07-28 request (header and _meta), declaring caps.
func postModern(t *testing.T, h http.Handler, method string, params map[string]any, caps map[string]any) *httptest.ResponseRecorder {
	t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "t", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 9, "method": method, "params": params})
	r := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(string(b)))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	r.Header.Set("Mcp-Method", method)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// The tasks extension is offered by server/discover, not to a 2025-11-25
// session's initialize (it is served on 2026-07-28 requests only); a task
// method whose request does not declare it is -32021 naming it, and a
// task id agentik never gave is -32602 (both HTTP 400, as 2026-07-28
// gives those codes).
func TestTasksExtensionOffered(t *testing.T) {
	h := New(Config{Agents: func(context.Context) ([]Agent, error) { return nil, nil }})
	tasks := taskExtension

	w := postModern(t, h, "server/discover", map[string]any{}, map[string]any{})
	var disc struct {
		Result struct {
			Capabilities struct{ Extensions map[string]any }
		}
	}
	if err := json.Unmarshal(w.Body.Bytes(), &disc); err != nil || disc.Result.Capabilities.Extensions[tasks] == nil {
		t.Errorf("server/discover: %d %s, want %s in capabilities.extensions", w.Code, w.Body, tasks)
	}
	w = post(t, h, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if w.Code != http.StatusOK || strings.Contains(w.Body.String(), tasks) {
		t.Errorf("initialize (2025-11-25): %d %s, want no %s", w.Code, w.Body, tasks)
	}
	w = postModern(t, h, "server/discover", map[string]any{}, map[string]any{})
	if !strings.Contains(w.Body.String(), tasks) {
		t.Errorf("server/discover after an initialize: %s, want %s still offered", w.Body, tasks)
	}

	var got struct {
		Error struct {
			Code int
			Data struct {
				RequiredCapabilities struct{ Extensions map[string]any }
			}
		}
	}
	w = postModern(t, h, "tasks/get", map[string]any{"taskId": "x"}, map[string]any{})
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != http.StatusBadRequest || got.Error.Code != -32021 || got.Error.Data.RequiredCapabilities.Extensions[tasks] == nil {
		t.Errorf("tasks/get without the extension declared: %d %s, want 400 -32021 naming it", w.Code, w.Body)
	}
	declared := map[string]any{"extensions": map[string]any{tasks: map[string]any{}}}
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		got.Error.Code = 0
		w = postModern(t, h, m, map[string]any{"taskId": "786512e2-9e0d-44bd-8f29-789f320fe840"}, declared)
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != http.StatusBadRequest || got.Error.Code != -32602 {
			t.Errorf("%s of a task agentik never gave: %d %s, want 400 -32602", m, w.Code, w.Body)
		}
	}
}
