package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// Reasoning fields a Reply can stream its reasoning in.
const (
	FieldReasoningContent = "reasoning_content" // DeepSeek, llama.cpp, LM Studio (the default)
	FieldReasoning        = "reasoning"         // Ollama, vLLM, OpenRouter
	FieldThink            = "think"             // inline <think>…</think> at the start of content
)

// Reply scripts the answer to one chat request.
type Reply struct {
	// Status other than 0 and 200 answers with an OpenAI-style error body
	// {"error":{"message","type","code"}} and nothing else.
	Status int
	// ErrorMessage is the error body's message; default the status text.
	ErrorMessage string
	// RetryAfter sets a Retry-After header (whole seconds) on an error.
	RetryAfter time.Duration

	// Reasoning is streamed before the text, in ReasoningField.
	Reasoning string
	// ReasoningField is FieldReasoningContent (the default), FieldReasoning
	// or FieldThink.
	ReasoningField string
	// Text is the answer.
	Text string
	// ToolCalls are streamed after the text; an empty ID gets "call_<n>".
	// The stream then finishes with finish_reason "tool_calls".
	ToolCalls []agent.ToolCall
	// SplitArgs spreads each call's arguments over several chunks, after a
	// first chunk with its id and name, as OpenAI does.
	SplitArgs bool
	// SameIndex streams every tool call at index 0, each with its own id,
	// as Ollama does for parallel calls.
	SameIndex bool
	// Usage is sent in a final chunk when the request asked for
	// stream_options.include_usage; nil means counted (words of the
	// prompt, content chunks of the answer).
	Usage *agent.Usage

	// ChunkSize is the runes per reasoning or text chunk; 0 means word by
	// word.
	ChunkSize int
	// Delay is slept before every content chunk but the first.
	Delay time.Duration
	// Wait is slept before the response starts (before its headers): a
	// model that takes a while to answer at all (or the client goes away).
	Wait time.Duration
	// CutAfter > 0 aborts the connection after that many content chunks,
	// without finish_reason or [DONE].
	CutAfter int
	// Hold, when set, blocks the response after its headers and first
	// (role) chunk until it is closed or the client goes away: a test can
	// act while a turn is provably mid-stream.
	Hold chan struct{}
	// HoldAfter > 0 moves the Hold to after that many content chunks: a
	// turn provably mid-answer, with its first words streamed.
	HoldAfter int
}

// wire chunk types.
type (
	wireChunk struct {
		ID      string       `json:"id"`
		Object  string       `json:"object"`
		Created int64        `json:"created"`
		Model   string       `json:"model"`
		Choices []wireChoice `json:"choices"`
		Usage   *agent.Usage `json:"usage,omitempty"`
	}
	wireChoice struct {
		Index        int       `json:"index"`
		Delta        wireDelta `json:"delta"`
		FinishReason *string   `json:"finish_reason"`
	}
	wireDelta struct {
		Role             string         `json:"role,omitempty"`
		Content          string         `json:"content,omitempty"`
		ReasoningContent string         `json:"reasoning_content,omitempty"`
		Reasoning        string         `json:"reasoning,omitempty"`
		ToolCalls        []wireToolCall `json:"tool_calls,omitempty"`
	}
	wireToolCall struct {
		Index    int    `json:"index"`
		ID       string `json:"id,omitempty"`
		Type     string `json:"type,omitempty"`
		Function struct {
			Name      string `json:"name,omitempty"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
)

// answer is a Reply laid out as the deltas of its stream.
type answer struct {
	deltas    []wireDelta
	text      string
	reasoning string
	calls     []agent.ToolCall
	finish    string
	usage     agent.Usage
}

// plan lays r out as deltas.
func plan(r Reply, req Request) answer {
	a := answer{text: r.Text, reasoning: r.Reasoning, calls: r.ToolCalls, finish: "stop"}
	content := r.Text
	if r.Reasoning != "" {
		switch r.ReasoningField {
		case FieldThink:
			content = "<think>" + r.Reasoning + "</think>\n\n" + r.Text
		case FieldReasoning:
			for _, s := range split(r.Reasoning, r.ChunkSize) {
				a.deltas = append(a.deltas, wireDelta{Reasoning: s})
			}
		default:
			for _, s := range split(r.Reasoning, r.ChunkSize) {
				a.deltas = append(a.deltas, wireDelta{ReasoningContent: s})
			}
		}
	}
	for _, s := range split(content, r.ChunkSize) {
		a.deltas = append(a.deltas, wireDelta{Content: s})
	}
	if req.MaxTokens > 0 && len(a.deltas) > req.MaxTokens {
		// max_tokens cuts the answer (a chunk counts as a token), as a
		// real server does, with finish_reason "length".
		a.deltas = a.deltas[:req.MaxTokens]
		a.text = ""
		for _, d := range a.deltas {
			a.text += d.Content
		}
		a.finish = "length"
		r.ToolCalls = nil
		a.calls = nil
	}
	for i, c := range r.ToolCalls {
		idx := i
		if r.SameIndex {
			idx = 0
		}
		head := wireToolCall{Index: idx, ID: c.ID, Type: "function"}
		head.Function.Name = c.Name
		if !r.SplitArgs {
			head.Function.Arguments = c.Arguments
			a.deltas = append(a.deltas, wireDelta{ToolCalls: []wireToolCall{head}})
			continue
		}
		a.deltas = append(a.deltas, wireDelta{ToolCalls: []wireToolCall{head}})
		for _, s := range split(c.Arguments, 4) {
			piece := wireToolCall{Index: idx}
			piece.Function.Arguments = s
			a.deltas = append(a.deltas, wireDelta{ToolCalls: []wireToolCall{piece}})
		}
	}
	if len(r.ToolCalls) > 0 {
		a.finish = "tool_calls"
	}
	if r.Usage != nil {
		a.usage = *r.Usage
	} else {
		prompt := 0
		for _, m := range req.Messages {
			prompt += countWords(m.Content)
		}
		a.usage = agent.Usage{PromptTokens: prompt, CompletionTokens: len(a.deltas), TotalTokens: prompt + len(a.deltas)}
	}
	return a
}

// stream writes a as server-sent events.
func (a answer) stream(w http.ResponseWriter, r *http.Request, model string, reply Reply, includeUsage bool) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	created := time.Now().Unix()
	var buf []byte
	send := func(c wireChunk) bool {
		c.ID, c.Object, c.Created, c.Model = "chatcmpl-llmtest", "chat.completion.chunk", created, model
		if c.Choices == nil {
			c.Choices = []wireChoice{}
		}
		b, err := json.Marshal(c)
		if err != nil {
			panic(fmt.Sprintf("llmtest: marshal chunk: %v", err))
		}
		buf = append(append(append(buf[:0], "data: "...), b...), "\n\n"...)
		if _, err := w.Write(buf); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	choice := func(d wireDelta, finish string) []wireChoice {
		c := wireChoice{Delta: d}
		if finish != "" {
			c.FinishReason = &finish
		}
		return []wireChoice{c}
	}
	if !send(wireChunk{Choices: choice(wireDelta{Role: "assistant"}, "")}) {
		return
	}
	ctx := r.Context()
	hold := func() bool {
		select {
		case <-reply.Hold:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if reply.Hold != nil && reply.HoldAfter <= 0 && !hold() {
		return
	}
	var timer *time.Timer
	for i, d := range a.deltas {
		if reply.Hold != nil && reply.HoldAfter > 0 && i == reply.HoldAfter && !hold() {
			return
		}
		if i > 0 && reply.Delay > 0 {
			if timer == nil {
				timer = time.NewTimer(reply.Delay)
				defer timer.Stop()
			} else {
				timer.Reset(reply.Delay)
			}
			select {
			case <-timer.C:
			case <-ctx.Done():
				return
			}
		}
		if !send(wireChunk{Choices: choice(d, "")}) {
			return
		}
		if reply.CutAfter > 0 && i+1 >= reply.CutAfter {
			panic(http.ErrAbortHandler) // closes the connection mid-stream
		}
	}
	if !send(wireChunk{Choices: choice(wireDelta{}, a.finish)}) {
		return
	}
	if includeUsage {
		u := a.usage
		if !send(wireChunk{Usage: &u}) {
			return
		}
	}
	_, _ = w.Write([]byte("data: [DONE]\n\n"))
	_ = rc.Flush()
}

// completion is a as a non-streamed chat.completion body.
func (a answer) completion(model string) any {
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	msg := struct {
		Role             string `json:"role"`
		Content          string `json:"content"`
		ReasoningContent string `json:"reasoning_content,omitempty"`
		ToolCalls        []call `json:"tool_calls,omitempty"`
	}{Role: "assistant", Content: a.text, ReasoningContent: a.reasoning}
	for _, c := range a.calls {
		var wc call
		wc.ID, wc.Type, wc.Function.Name, wc.Function.Arguments = c.ID, "function", c.Name, c.Arguments
		msg.ToolCalls = append(msg.ToolCalls, wc)
	}
	return map[string]any{
		"id": "chatcmpl-llmtest", "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": a.finish}},
		"usage":   a.usage,
	}
}
