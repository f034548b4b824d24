package aisdk

import (
	"encoding/json"
	"strconv"

	"github.com/agentik/agentik/internal/agent"
)

// chunk is one chunk of the AI SDK's UI message stream (the `ai`
// package's uiMessageChunkSchema), as far as agentik makes them. Fields
// that a type does not have stay empty and are left out.
type chunk struct {
	Type             string          `json:"type"`
	ID               string          `json:"id,omitempty"`
	Delta            string          `json:"delta,omitempty"`
	MessageID        string          `json:"messageId,omitempty"`
	ToolCallID       string          `json:"toolCallId,omitempty"`
	ToolName         string          `json:"toolName,omitempty"`
	Input            json.RawMessage `json:"input,omitempty"`
	Output           json.RawMessage `json:"output,omitempty"`
	ProviderExecuted bool            `json:"providerExecuted,omitempty"`
	Dynamic          bool            `json:"dynamic,omitempty"`
	ApprovalID       string          `json:"approvalId,omitempty"`
	ErrorText        string          `json:"errorText,omitempty"`
	URL              string          `json:"url,omitempty"`
	MediaType        string          `json:"mediaType,omitempty"`
	FinishReason     string          `json:"finishReason,omitempty"`
	MessageMetadata  *metadata       `json:"messageMetadata,omitempty"`
}

// metadata is the message metadata of the finish chunk: the turn's usage,
// in the AI SDK's names, and whether the answer was cut short.
type metadata struct {
	Usage       *usage `json:"usage,omitempty"`
	Interrupted bool   `json:"interrupted,omitempty"`
}

type usage struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
	TotalTokens  int `json:"totalTokens"`
}

// projection turns one turn's events into the chunks of one assistant UI
// message. It holds only what the events before said (which parts are
// open), so the same events always give the same chunks: a replay from
// the turn's first event is the same stream again.
type projection struct {
	messageID string

	parts       int    // parts made so far, numbering their ids
	text        string // id of the open text part, "" when none
	reasoning   string // id of the open reasoning part
	inReasoning bool   // following append_text is reasoning
	step        bool   // a step is open
	afterTools  bool   // tool results came since the model last spoke: the next output is a new step
	asked       map[string]bool
	denied      map[string]bool
	failed      bool // an error event came
	interrupted bool // an interrupted event came
	done        bool // the message is finished
}

func newProjection(messageID string) *projection {
	return &projection{messageID: messageID, asked: map[string]bool{}, denied: map[string]bool{}}
}

// start is the stream's first chunk.
func (p *projection) start() chunk { return chunk{Type: "start", MessageID: p.messageID} }

// on returns the chunks of one event; done is set after the turn's end.
func (p *projection) on(ev *agent.Event) []chunk {
	var out []chunk
	switch ev.Type {
	case agent.EventStartReasoning:
		out = p.output(out)
		out = p.closeText(out)
		p.inReasoning = true
	case agent.EventStartResponse:
		out = p.output(out)
		out = p.closeReasoning(out)
		p.inReasoning = false
	case agent.EventAppendText:
		out = p.output(out)
		if p.inReasoning {
			if p.reasoning == "" {
				p.reasoning = p.nextID("reasoning")
				out = append(out, chunk{Type: "reasoning-start", ID: p.reasoning})
			}
			return append(out, chunk{Type: "reasoning-delta", ID: p.reasoning, Delta: ev.Text})
		}
		if p.text == "" {
			p.text = p.nextID("text")
			out = append(out, chunk{Type: "text-start", ID: p.text})
		}
		return append(out, chunk{Type: "text-delta", ID: p.text, Delta: ev.Text})
	case agent.EventAppendImage:
		out = p.output(out)
		out = p.closeParts(out)
		return append(out, chunk{Type: "file", URL: "data:" + ev.Mime + ";base64," + ev.Data, MediaType: ev.Mime})
	case agent.EventMessage:
		if ev.Message != nil && ev.Message.Type == agent.MessageAssistant {
			out = p.closeParts(out) // one model call's answer is complete
		}
	case agent.EventToolCall:
		out = p.output(out)
		out = p.closeParts(out)
		out = append(out,
			chunk{Type: "tool-input-start", ToolCallID: ev.CallID, ToolName: ev.Name, ProviderExecuted: true, Dynamic: true},
			chunk{Type: "tool-input-available", ToolCallID: ev.CallID, ToolName: ev.Name, Input: input(ev.Arguments), ProviderExecuted: true, Dynamic: true})
	case agent.EventApprovalRequest:
		p.asked[ev.CallID] = true
		out = append(out, chunk{Type: "tool-approval-request", ApprovalID: ev.CallID, ToolCallID: ev.CallID})
	case agent.EventApproval:
		// No tool-approval-response chunk: ai 6 refuses the type (its
		// stream fails validation), and neither version needs it — the
		// client that decided shows its answer already, and the outcome
		// (tool-output-available or -denied) ends the part on both.
		delete(p.asked, ev.CallID)
		if ev.Decision != agent.DecisionApprove {
			p.denied[ev.CallID] = true
			out = append(out, chunk{Type: "tool-output-denied", ToolCallID: ev.CallID})
		}
	case agent.EventToolResult:
		p.afterTools = true
		if p.denied[ev.CallID] {
			return nil // shown as denied already
		}
		if ev.IsError {
			return append(out, chunk{Type: "tool-output-error", ToolCallID: ev.CallID, ErrorText: ev.Result, ProviderExecuted: true, Dynamic: true})
		}
		out2, _ := json.Marshal(ev.Result)
		return append(out, chunk{Type: "tool-output-available", ToolCallID: ev.CallID, Output: out2, ProviderExecuted: true, Dynamic: true})
	case agent.EventError:
		out = p.closeParts(out)
		msg := ev.Error
		if msg == "" {
			msg = ev.Code
		}
		p.failed = true
		return append(out, chunk{Type: "error", ErrorText: msg})
	case agent.EventInterrupted:
		p.interrupted = true
	case agent.EventEnd:
		reason := "stop"
		switch {
		case p.failed:
			reason = "error"
		case p.interrupted:
			// ai 7's "interrupted" fails ai 6's validation: "other",
			// with interrupted in the message metadata, reads on both.
			reason = "other"
		}
		return p.finish(out, reason, ev.Usage)
	}
	return out
}

// parked returns the chunks that end the stream of a turn that now waits
// for decisions on waiting (the conversation's Waiting), once every one
// of them was asked in this stream; nil otherwise. The AI SDK answers a
// tool-approval-request with a new request, as after a finished answer.
func (p *projection) parked(waiting []string) []chunk {
	if p.done || len(waiting) == 0 {
		return nil
	}
	for _, id := range waiting {
		if !p.asked[id] {
			return nil
		}
	}
	return p.finish(nil, "tool-calls", nil)
}

// finish closes what is open and ends the message.
func (p *projection) finish(out []chunk, reason string, u *agent.Usage) []chunk {
	out = p.closeParts(out)
	if p.step {
		out = append(out, chunk{Type: "finish-step"})
		p.step = false
	}
	f := chunk{Type: "finish", FinishReason: reason}
	if u != nil || p.interrupted {
		f.MessageMetadata = &metadata{Interrupted: p.interrupted}
	}
	if u != nil {
		f.MessageMetadata.Usage = &usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	}
	p.done = true
	return append(out, f)
}

// output opens a step before the model's output: the first, and each
// after tool results.
func (p *projection) output(out []chunk) []chunk {
	if p.step && p.afterTools {
		out = p.closeParts(out)
		out = append(out, chunk{Type: "finish-step"})
		p.step = false
	}
	p.afterTools = false
	if !p.step {
		p.step = true
		out = append(out, chunk{Type: "start-step"})
	}
	return out
}

func (p *projection) nextID(kind string) string {
	p.parts++
	return kind + "-" + strconv.Itoa(p.parts)
}

func (p *projection) closeText(out []chunk) []chunk {
	if p.text != "" {
		out = append(out, chunk{Type: "text-end", ID: p.text})
		p.text = ""
	}
	return out
}

func (p *projection) closeReasoning(out []chunk) []chunk {
	if p.reasoning != "" {
		out = append(out, chunk{Type: "reasoning-end", ID: p.reasoning})
		p.reasoning = ""
	}
	return out
}

func (p *projection) closeParts(out []chunk) []chunk {
	return p.closeText(p.closeReasoning(out))
}

// input is a tool call's arguments as the JSON value the AI SDK shows:
// the arguments' JSON, or their text as a string when they are not JSON.
func input(args string) json.RawMessage {
	if args == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	b, _ := json.Marshal(args)
	return b
}
