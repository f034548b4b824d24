// Package demo is the scripted model of `agentik --demo`: a small
// OpenAI-compatible endpoint (GET /v1/models, POST /v1/chat/completions,
// streamed or not) whose every turn shows what the UI renders, so a
// newcomer sees reasoning, a tool round and a Markdown answer without a
// real model. agentik reaches it through the real model adapter, so its
// answers take the same path as a real model's.
//
// It is product code, apart from the test fake (internal/llm/llmtest),
// which the production binary does not link.
package demo

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
)

// ModelName is the one model the endpoint lists.
const ModelName = "agentik-demo"

// ToolName is the tool the script calls when the request offers it:
// `agentik --demo` registers a built-in tool of that name that counts the
// words of a text.
const ToolName = "demo_word_count"

// Delay is the pause between the streamed chunks, so answers stream
// visibly.
const Delay = 15 * time.Millisecond

// maxBody bounds a request body (a long demo conversation fits easily).
const maxBody = 32 << 20

// Handler serves the endpoint under /v1.
func Handler() http.Handler { return handler{} }

type handler struct{}

func (handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch path := strings.TrimPrefix(r.URL.Path, "/v1"); {
	case path == "/models" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
			map[string]any{"id": ModelName, "object": "model", "owned_by": "agentik"},
		}})
	case path == "/chat/completions" && r.Method == http.MethodPost:
		chat(w, r)
	case path == "/embeddings" && r.Method == http.MethodPost:
		ServeEmbeddings(w, r) // embed.go
	default:
		writeError(w, http.StatusNotFound, "the demo model serves GET /v1/models and POST /v1/chat/completions, not "+r.Method+" "+r.URL.Path)
	}
}

// Message is the part of a chat message the script reads.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"-"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is a call the assistant made.
type ToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Request is the part of a chat request the script reads.
type Request struct {
	Messages []Message
	Tools    []string // the names of the offered tools
}

// Reply is what the script answers.
type Reply struct {
	Reasoning string
	Text      string
	Call      string // the arguments of a call of ToolName; "" for none
}

// Script answers req: the first round streams reasoning, a line of text
// and a call of ToolName (when the request offers it) with the user's
// text; once the tool answered, a Markdown answer with a list, a code
// block and a table that quotes the tool's result.
func Script(req Request) Reply {
	lastUser := -1
	for i, m := range req.Messages {
		if m.Role == "user" {
			lastUser = i
		}
	}
	said := ""
	if lastUser >= 0 {
		said = strings.TrimSpace(req.Messages[lastUser].Content)
	}
	offered := false
	for _, t := range req.Tools {
		offered = offered || t == ToolName
	}
	result, called := "", false
	if lastUser >= 0 {
		result, called = toolResult(req.Messages[lastUser+1:])
	}
	if offered && !called {
		args, _ := json.Marshal(map[string]string{"text": said})
		return Reply{
			Reasoning: fmt.Sprintf("The user wrote %d words. This is the demo model, so I will show every part of the UI: "+
				"first this reasoning, then a call of the built-in %s tool, then an answer with a list, a code block and a table.",
				countWords(said), ToolName),
			Text: "Let me count your words with the demo tool.",
			Call: string(args),
		}
	}
	if !called {
		result = fmt.Sprintf("%d words (counted without the tool)", countWords(said))
	}
	return Reply{Text: answer(result)}
}

// toolResult is the content of the first answer to a call of ToolName.
func toolResult(msgs []Message) (string, bool) {
	ids := map[string]bool{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if c.Function.Name == ToolName {
				ids[c.ID] = true
			}
		}
		if m.Role == "tool" && ids[m.ToolCallID] {
			return m.Content, true
		}
	}
	return "", false
}

// answer is the final answer around the tool's result.
func answer(result string) string {
	return "**This is agentik's demo model**: the answers are scripted and no real model runs.\n\n" +
		"The demo tool says: *" + result + "*.\n\n" +
		"Things to try:\n\n" +
		"- send another message: every answer streams like this one;\n" +
		"- press **Stop** during an answer to interrupt it;\n" +
		"- reload the page: the conversation is stored, and a stream resumes where it was.\n\n" +
		"To use a real model, restart agentik without `--demo`:\n\n" +
		"```sh\n" +
		"OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=qwen3:8b go run ./cmd/agentik\n" +
		"```\n\n" +
		"| Part of a turn | How the UI shows it |\n" +
		"| --- | --- |\n" +
		"| reasoning | a collapsible thinking block |\n" +
		"| tool call | a card with the arguments and the result |\n" +
		"| answer | Markdown: lists, code, tables |\n"
}

// wireRequest is a chat request as sent.
type wireRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Message
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// decode reads a chat request; content may be a string or a list of
// parts, of which the text parts count.
func decode(body []byte) (Request, wireRequest, error) {
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		return Request{}, wr, fmt.Errorf("the request body is not a chat completions request: %v", err)
	}
	var req Request
	for _, m := range wr.Messages {
		msg := m.Message
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			msg.Content = s
		} else {
			var parts []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			_ = json.Unmarshal(m.Content, &parts)
			for _, p := range parts {
				if p.Type == "text" {
					msg.Content += p.Text
				}
			}
		}
		req.Messages = append(req.Messages, msg)
	}
	for _, t := range wr.Tools {
		req.Tools = append(req.Tools, t.Function.Name)
	}
	return req, wr, nil
}

type delta struct {
	Role             string          `json:"role,omitempty"`
	Content          string          `json:"content,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	ToolCalls        []wireToolDelta `json:"tool_calls,omitempty"`
}

type wireToolDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// callID numbers tool calls uniquely within a process.
var callID atomic.Int64

func chat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, "read the request body: "+err.Error())
		return
	}
	req, wr, err := decode(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	reply := Script(req)
	var deltas []delta
	for _, s := range words(reply.Reasoning) {
		deltas = append(deltas, delta{ReasoningContent: s})
	}
	for _, s := range words(reply.Text) {
		deltas = append(deltas, delta{Content: s})
	}
	finish := "stop"
	var call *wireToolDelta
	if reply.Call != "" {
		call = &wireToolDelta{ID: fmt.Sprintf("call_demo_%d", callID.Add(1)), Type: "function"}
		call.Function.Name, call.Function.Arguments = ToolName, reply.Call
		deltas = append(deltas, delta{ToolCalls: []wireToolDelta{*call}})
		finish = "tool_calls"
	}
	prompt := 0
	for _, m := range req.Messages {
		prompt += countWords(m.Content)
	}
	u := usage{PromptTokens: prompt, CompletionTokens: len(deltas), TotalTokens: prompt + len(deltas)}
	model := wr.Model
	if model == "" {
		model = ModelName
	}
	created := time.Now().Unix()
	if !wr.Stream {
		msg := map[string]any{"role": "assistant", "content": reply.Text}
		if reply.Reasoning != "" {
			msg["reasoning_content"] = reply.Reasoning
		}
		if call != nil {
			msg["tool_calls"] = []any{map[string]any{"id": call.ID, "type": "function", "function": call.Function}}
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": "chatcmpl-demo", "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   u,
		})
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	send := func(chunk map[string]any) bool {
		chunk["id"], chunk["object"], chunk["created"], chunk["model"] = "chatcmpl-demo", "chat.completion.chunk", created, model
		b, _ := json.Marshal(chunk)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	choice := func(d delta, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}}
	}
	if !send(map[string]any{"choices": choice(delta{Role: "assistant"}, nil)}) {
		return
	}
	timer := time.NewTimer(Delay)
	defer timer.Stop()
	for i, d := range deltas {
		if i > 0 {
			timer.Reset(Delay)
			select {
			case <-timer.C:
			case <-r.Context().Done():
				return
			}
		}
		if !send(map[string]any{"choices": choice(d, nil)}) {
			return
		}
	}
	if !send(map[string]any{"choices": choice(delta{}, finish)}) {
		return
	}
	if wr.StreamOptions != nil && wr.StreamOptions.IncludeUsage {
		if !send(map[string]any{"choices": []any{}, "usage": u}) {
			return
		}
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	_ = rc.Flush()
}

// words cuts s word by word, each piece a word with the whitespace
// before it.
func words(s string) []string {
	var out []string
	start, prevSpace := 0, true
	for i, r := range s {
		space := unicode.IsSpace(r)
		if space && !prevSpace && i > start {
			out = append(out, s[start:i])
			start = i
		}
		prevSpace = space
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func countWords(s string) int { return len(strings.Fields(s)) }

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "code": nil}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
