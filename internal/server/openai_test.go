package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// The facade's own tests are in internal/openai (its handler alone over
// the runner); these check its mount: the middleware's refusals in
// OpenAI's shape, and shutdown ending its streams.

// postV1 posts body to the OpenAI facade and returns the response.
func postV1(t *testing.T, ts *testServer, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("POST", ts.URL+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

type oaiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	} `json:"error"`
}

type oaiCompletion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role             string  `json:"role"`
			Content          *string `json:"content"`
			ReasoningContent string  `json:"reasoning_content"`
			ToolCalls        []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *agent.Usage `json:"usage"`
}

func decodeResp(t *testing.T, resp *http.Response, wantStatus int, v any) {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != wantStatus {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, wantStatus, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

func TestOpenAIAuthAndRoutes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withKeys("k1"))
	resp, err := http.Get(ts.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var e oaiError
	decodeResp(t, resp, 401, &e)
	if e.Error.Type != "authentication_error" || e.Error.Code != "invalid_api_key" {
		t.Fatalf("401 %+v", e)
	}
	// A Bearer call needs no Origin of this host.
	var c oaiCompletion
	decodeResp(t, postV1(t, ts, `{"model":"fake","messages":[{"role":"user","content":"hi"}]}`, "Authorization", "Bearer k1", "Origin", "https://elsewhere.example"), 200, &c)
	decodeResp(t, postV1(t, ts, `{}`, "Authorization", "Bearer k1", "X-Unused", "1"), 400, &e)
	req, _ := http.NewRequest("GET", ts.URL+"/v1/embeddings", nil)
	req.Header.Set("Authorization", "Bearer k1")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	decodeResp(t, resp, 404, &e)
	if e.Error.Code != "not_found" || !strings.Contains(e.Error.Message, "/v1/chat/completions") {
		t.Fatalf("404 %+v", e)
	}
	req, _ = http.NewRequest("POST", ts.URL+"/v1", nil)
	req.Header.Set("Authorization", "Bearer k1")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	decodeResp(t, resp, 404, &e)
	// A cookie call from another origin is still refused, in OpenAI's shape.
	decodeResp(t, postV1(t, ts, `{}`, "Cookie", "agentik_session=x", "Origin", "https://elsewhere.example"), 403, &e)
	if e.Error.Type != "permission_error" {
		t.Fatalf("403 %+v", e)
	}
}

// TestOpenAIShutdownMidAnswer: a request without stream that the server
// stops following (shutdown) gets a 503 in OpenAI's shape, not an empty 200.
func TestOpenAIShutdownMidAnswer(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	hold := make(chan struct{})
	defer close(hold)
	ts.Fake.Enqueue(llmtest.Reply{Text: "late", Hold: hold})
	got := make(chan *http.Response, 1)
	go func() {
		resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"fake","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Error(err)
		}
		got <- resp
	}()
	waitFor(t, "the model asked (it holds the answer)", func() bool { return len(ts.Fake.Requests()) > 0 })
	if err := ts.App.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	resp := <-got
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	var e oaiError
	decodeResp(t, resp, 503, &e)
	if e.Error.Type != "server_error" || e.Error.Code != "unavailable" {
		t.Fatalf("error %+v", e)
	}
}
