package llm

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/agentik/agentik/internal/agent"
)

// chunk is one streamed chat completion chunk, decoded by us rather than
// by go-openai because go-openai knows only reasoning_content, and Ollama,
// vLLM and OpenRouter send reasoning.
type chunk struct {
	Choices []choiceChunk `json:"choices"`
	Usage   *wireUsage    `json:"usage"`
}

// maxUsageTokens is the most tokens a model's usage may report for one
// count of one call; past it (or below 0, or not a whole number) the count
// is not believed. 2^30 is far above any context window.
const maxUsageTokens = 1 << 30

// wireUsage is a chunk's usage as the model sent it: counts it cannot
// mean (see maxUsageTokens) make the whole usage unknown rather than a
// stored, relayed and summed lie.
type wireUsage struct {
	PromptTokens     usageCount `json:"prompt_tokens"`
	CompletionTokens usageCount `json:"completion_tokens"`
	TotalTokens      usageCount `json:"total_tokens"`
}

// usage is u when every count is believable; ok is false otherwise. A
// missing total is the sum of the others.
func (u *wireUsage) usage() (agent.Usage, bool) {
	if u.PromptTokens.bad || u.CompletionTokens.bad || u.TotalTokens.bad {
		return agent.Usage{}, false
	}
	out := agent.Usage{PromptTokens: u.PromptTokens.n, CompletionTokens: u.CompletionTokens.n, TotalTokens: u.TotalTokens.n}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.PromptTokens + out.CompletionTokens
	}
	return out, true
}

// usageCount is one token count; bad when it is not a whole number in
// 0..maxUsageTokens (null or absent is 0).
type usageCount struct {
	n   int
	bad bool
}

func (c *usageCount) UnmarshalJSON(b []byte) error {
	var f *float64
	if json.Unmarshal(b, &f) != nil || (f != nil && (*f < 0 || *f > maxUsageTokens || *f != math.Trunc(*f))) {
		c.bad = true
		return nil
	}
	if f != nil {
		c.n = int(*f)
	}
	return nil
}

type choiceChunk struct {
	Index        int         `json:"index"`
	Delta        deltaChunk  `json:"delta"`
	FinishReason looseString `json:"finish_reason"`
}

type deltaChunk struct {
	Content          looseString     `json:"content"`
	ReasoningContent looseString     `json:"reasoning_content"`
	Reasoning        looseString     `json:"reasoning"`
	ToolCalls        []toolCallChunk `json:"tool_calls"`
}

type toolCallChunk struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// looseString decodes a JSON string and reads null or any other value as
// empty, so one server's odd extension does not fail a whole stream.
type looseString string

func (s *looseString) UnmarshalJSON(b []byte) error {
	// encoding/json hands over one valid value: a valid UTF-8 string
	// without escapes (nearly every streamed token) is its bytes between
	// the quotes, with no second decode; anything else goes through
	// json.Unmarshal (which also turns invalid UTF-8 into U+FFFD).
	if n := len(b); n >= 2 && b[0] == '"' && bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b) {
		*s = looseString(b[1 : n-1])
		return nil
	}
	var v string
	if json.Unmarshal(b, &v) == nil {
		*s = looseString(v)
	}
	return nil
}

// accumulator folds the chunks of one attempt into deltas and a response.
type accumulator struct {
	text      strings.Builder
	reasoning strings.Builder
	think     thinkSplitter
	calls     []agent.ToolCall
	byIndex   map[int]int // stream index → position in calls of its current call
	usage     agent.Usage
	finished  bool // a choice carried a finish_reason
	emitted   bool // on was called at least once
}

func newAccumulator() *accumulator { return &accumulator{byIndex: map[int]int{}} }

// add folds one raw chunk in, calling on for its deltas in order.
func (a *accumulator) add(raw []byte, on func(agent.Delta) error) error {
	var c chunk
	if err := decodeChunk(raw, &c); err != nil {
		return fmt.Errorf("decode chunk: %w", err)
	}
	if c.Usage != nil {
		a.usage, _ = c.Usage.usage() // unbelievable counts: unknown
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // we ask for one choice
		}
		d := ch.Delta
		r := string(d.ReasoningContent)
		if r == "" {
			r = string(d.Reasoning)
		}
		if err := a.emit(piece{reasoning: true, s: r}, on); err != nil {
			return err
		}
		for _, p := range a.think.split(string(d.Content)) {
			if err := a.emit(p, on); err != nil {
				return err
			}
		}
		for _, tc := range d.ToolCalls {
			idx := 0
			if tc.Index != nil {
				idx = *tc.Index
			}
			// (index, id) names a call: Ollama streams parallel calls all
			// at index 0, each with its own id.
			pos, ok := a.byIndex[idx]
			if !ok || (tc.ID != "" && a.calls[pos].ID != "" && a.calls[pos].ID != tc.ID) {
				a.calls = append(a.calls, agent.ToolCall{})
				pos = len(a.calls) - 1
				a.byIndex[idx] = pos
			}
			call := &a.calls[pos]
			if call.ID == "" {
				call.ID = tc.ID
			}
			if n := tc.Function.Name; n != "" && n != call.Name {
				call.Name += n
			}
			call.Arguments += tc.Function.Arguments
			if n := len(tc.Function.Arguments); n > 0 {
				if err := on(agent.Delta{ToolArguments: n}); err != nil {
					return callbackError{err} // past the answer cap: stop reading
				}
			}
		}
		if ch.FinishReason != "" {
			a.finished = true
		}
	}
	return nil
}

// flush emits what the think splitter still holds.
func (a *accumulator) flush(on func(agent.Delta) error) error {
	for _, p := range a.think.flush() {
		if err := a.emit(p, on); err != nil {
			return err
		}
	}
	return nil
}

func (a *accumulator) emit(p piece, on func(agent.Delta) error) error {
	if p.s == "" {
		return nil
	}
	a.emitted = true
	var d agent.Delta
	if p.reasoning {
		a.reasoning.WriteString(p.s)
		d.Reasoning = p.s
	} else {
		a.text.WriteString(p.s)
		d.Text = p.s
	}
	if err := on(d); err != nil {
		return callbackError{err}
	}
	return nil
}

// response is what arrived so far. Calls without an id get one, calls
// without arguments get "{}".
func (a *accumulator) response() agent.ChatResponse {
	for i := range a.calls {
		if a.calls[i].ID == "" {
			a.calls[i].ID = newCallID()
		}
		if strings.TrimSpace(a.calls[i].Arguments) == "" {
			a.calls[i].Arguments = "{}"
		}
	}
	return agent.ChatResponse{
		Text:      a.text.String(),
		Reasoning: a.reasoning.String(),
		ToolCalls: a.calls,
		Usage:     a.usage,
	}
}

func newCallID() string {
	return "call_" + rand.Text()[:16]
}

// piece is a run of reasoning or answer text.
type piece struct {
	reasoning bool
	s         string
}

// Inline reasoning tags.
const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// thinkSplitter separates inline <think>…</think> reasoning from answer
// text, with the tags split anywhere across chunks. Only a <think> that
// opens the content (after whitespace) counts: a tag in the middle of an
// answer is text.
type thinkSplitter struct {
	state   int    // thinkStart, thinkIn or thinkOut
	pending string // held back: a possible tag prefix
	trim    bool   // drop the whitespace that follows </think>
}

const (
	thinkStart = iota
	thinkIn
	thinkOut
)

func (t *thinkSplitter) split(s string) []piece {
	if s == "" {
		return nil
	}
	switch t.state {
	case thinkStart:
		buf := t.pending + s
		lead := strings.TrimLeft(buf, " \t\r\n")
		switch {
		case strings.HasPrefix(lead, thinkOpen):
			t.state, t.pending = thinkIn, ""
			return t.split(lead[len(thinkOpen):])
		case strings.HasPrefix(thinkOpen, lead):
			t.pending = buf
			return nil
		}
		t.state, t.pending = thinkOut, ""
		return []piece{{s: buf}}
	case thinkIn:
		buf := t.pending + s
		if i := strings.Index(buf, thinkClose); i >= 0 {
			t.state, t.pending, t.trim = thinkOut, "", true
			return append([]piece{{reasoning: true, s: buf[:i]}}, t.split(buf[i+len(thinkClose):])...)
		}
		k := partialSuffix(buf, thinkClose)
		t.pending = buf[len(buf)-k:]
		return []piece{{reasoning: true, s: buf[:len(buf)-k]}}
	}
	if t.trim {
		s = strings.TrimLeft(s, " \t\r\n")
		if s == "" {
			return nil
		}
		t.trim = false
	}
	return []piece{{s: s}}
}

// flush returns what is held back once the stream ended.
func (t *thinkSplitter) flush() []piece {
	p := t.pending
	t.pending = ""
	switch {
	case p == "":
		return nil
	case t.state == thinkIn:
		return []piece{{reasoning: true, s: p}}
	}
	return []piece{{s: p}}
}

// partialSuffix is the length of the longest suffix of s that is a proper
// prefix of tag.
func partialSuffix(s, tag string) int {
	for k := min(len(tag)-1, len(s)); k > 0; k-- {
		if strings.HasSuffix(s, tag[:k]) {
			return k
		}
	}
	return 0
}
