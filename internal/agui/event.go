package agui

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentik/agentik/internal/agent"
)

// AG-UI event types agentik sends.
const (
	runStarted          = "RUN_STARTED"
	runFinished         = "RUN_FINISHED"
	runError            = "RUN_ERROR"
	messagesSnapshot    = "MESSAGES_SNAPSHOT"
	textStart           = "TEXT_MESSAGE_START"
	textContent         = "TEXT_MESSAGE_CONTENT"
	textEnd             = "TEXT_MESSAGE_END"
	toolStart           = "TOOL_CALL_START"
	toolArgs            = "TOOL_CALL_ARGS"
	toolEnd             = "TOOL_CALL_END"
	toolResult          = "TOOL_CALL_RESULT"
	reasoningStart      = "REASONING_START"
	reasoningMsgStart   = "REASONING_MESSAGE_START"
	reasoningMsgContent = "REASONING_MESSAGE_CONTENT"
	reasoningMsgEnd     = "REASONING_MESSAGE_END"
	reasoningEnd        = "REASONING_END"
)

// event is one AG-UI event (@ag-ui/core's EventSchemas), as far as agentik
// makes them; fields a type does not have stay empty and are left out.
type event struct {
	Type            string     `json:"type"`
	ThreadID        string     `json:"threadId,omitempty"`
	RunID           string     `json:"runId,omitempty"`
	MessageID       string     `json:"messageId,omitempty"`
	Role            string     `json:"role,omitempty"`
	Delta           string     `json:"delta,omitempty"`
	ToolCallID      string     `json:"toolCallId,omitempty"`
	ToolCallName    string     `json:"toolCallName,omitempty"`
	ParentMessageID string     `json:"parentMessageId,omitempty"`
	Content         *string    `json:"content,omitempty"`
	Messages        *[]message `json:"messages,omitempty"`
	Outcome         *outcome   `json:"outcome,omitempty"`
	Usage           []usage    `json:"usage,omitempty"`
	Message         string     `json:"message,omitempty"` // RUN_ERROR's
	Code            string     `json:"code,omitempty"`
}

// outcome is why a run finished.
type outcome struct {
	Type       string      `json:"type"` // success, interrupt, cancelled
	Interrupts []interrupt `json:"interrupts,omitempty"`
}

// interrupt is a tool call waiting for a person's decision; a resume
// entry answers it with the payload {approved, editedArgs?, reason?}.
type interrupt struct {
	ID             string          `json:"id"`
	Reason         string          `json:"reason"`
	Message        string          `json:"message,omitempty"`
	ToolCallID     string          `json:"toolCallId,omitempty"`
	ResponseSchema json.RawMessage `json:"responseSchema,omitempty"`
}

// approvalSchema is the response schema of an approval interrupt: the
// one AG-UI recommends for approve-with-edits.
var approvalSchema = json.RawMessage(`{"type":"object","properties":{"approved":{"type":"boolean"},"editedArgs":{"type":"object","description":"the tool's arguments to run it with instead (a full replacement)"},"reason":{"type":"string"}},"required":["approved"]}`)

type usage struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
	TotalTokens  int `json:"totalTokens"`
}

// message is an AG-UI message of a MESSAGES_SNAPSHOT.
type message struct {
	ID         string     `json:"id"`
	Role       string     `json:"role"`
	Content    *string    `json:"content,omitempty"`
	ToolCalls  []toolCall `json:"toolCalls,omitempty"`
	ToolCallID string     `json:"toolCallId,omitempty"`
}

type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Ids of the messages a turn makes, the same in the stream and in later
// snapshots: the k-th answer text after user message u is u-k, a tool
// call's message and its result's are named by the call id.
func textID(user string, k int) string     { return user + "-" + strconv.Itoa(k) }
func callMessageID(callID string) string   { return "call-" + callID }
func resultMessageID(callID string) string { return "result-" + callID }

// userID is the id a user message has in AG-UI: the id its client gave
// it (its client_id), else agentik's.
func userID(m agent.Message) string {
	if m.ClientID != "" {
		return m.ClientID
	}
	return m.ID
}

// snapshot is the messages of the active path in AG-UI's terms, with the
// ids the stream gave them. texts is how many answer texts follow the
// last user message (where a continuing turn's numbering goes on).
func snapshot(ms []agent.Message) (out []message, lastUser string, texts int) {
	out = []message{}
	for _, m := range ms {
		switch m.Type {
		case agent.MessageUser:
			lastUser, texts = userID(m), 0
			s := text(m.Content)
			out = append(out, message{ID: lastUser, Role: "user", Content: &s})
		case agent.MessageAssistant:
			s := text(m.Content)
			if s == "" {
				continue
			}
			texts++
			out = append(out, message{ID: textID(lastUser, texts), Role: "assistant", Content: &s})
		case agent.MessageToolCall:
			tc := toolCall{ID: m.CallID, Type: "function"}
			tc.Function.Name, tc.Function.Arguments = m.Name, m.Arguments
			out = append(out, message{ID: callMessageID(m.CallID), Role: "assistant", ToolCalls: []toolCall{tc}})
		case agent.MessageToolResult:
			s := m.Result
			out = append(out, message{ID: resultMessageID(m.CallID), Role: "tool", Content: &s, ToolCallID: m.CallID})
		}
	}
	return out, lastUser, texts
}

func text(cs []agent.Content) string {
	var s string
	for _, c := range cs {
		if c.Type == agent.ContentText {
			s += c.Body
		}
	}
	return s
}

// projection turns one turn's events into one run's AG-UI events. Like
// the AI SDK's, it holds only what earlier events said, so a replay from
// the turn's first event is the same run again.
type projection struct {
	threadID, runID string
	user            string // AG-UI id of the turn's user message
	texts           int    // answer texts so far in the turn
	parts           int    // reasoning messages so far
	text            string // id of the open text message
	reasoning       string // id of the open reasoning message
	inReasoning     bool
	asked           map[string]interrupt
	order           []string // asked call ids in order
	failed          bool
	interrupted     bool
	done            bool
}

func newProjection(threadID, runID, user string, texts int) *projection {
	return &projection{threadID: threadID, runID: runID, user: user, texts: texts, asked: map[string]interrupt{}}
}

func (p *projection) started() event {
	return event{Type: runStarted, ThreadID: p.threadID, RunID: p.runID}
}

// on returns the events of one agentik event.
func (p *projection) on(ev *agent.Event) []event {
	var out []event
	switch ev.Type {
	case agent.EventMessage:
		switch {
		case ev.Message == nil:
		case ev.Message.Type == agent.MessageUser:
			p.user, p.texts = userID(*ev.Message), 0
		case ev.Message.Type == agent.MessageAssistant:
			out = p.closeParts(out)
		}
	case agent.EventStartReasoning:
		out = p.closeText(out)
		p.inReasoning = true
	case agent.EventStartResponse:
		out = p.closeReasoning(out)
		p.inReasoning = false
	case agent.EventAppendText:
		if ev.Text == "" {
			return nil
		}
		if p.inReasoning {
			if p.reasoning == "" {
				p.parts++
				p.reasoning = p.user + "-reasoning-" + strconv.Itoa(p.parts)
				out = append(out, event{Type: reasoningStart, MessageID: p.reasoning}, event{Type: reasoningMsgStart, MessageID: p.reasoning, Role: "reasoning"})
			}
			return append(out, event{Type: reasoningMsgContent, MessageID: p.reasoning, Delta: ev.Text})
		}
		if p.text == "" {
			p.texts++
			p.text = textID(p.user, p.texts)
			out = append(out, event{Type: textStart, MessageID: p.text, Role: "assistant"})
		}
		return append(out, event{Type: textContent, MessageID: p.text, Delta: ev.Text})
	case agent.EventToolCall:
		out = p.closeParts(out)
		out = append(out, event{Type: toolStart, ToolCallID: ev.CallID, ToolCallName: ev.Name, ParentMessageID: callMessageID(ev.CallID)})
		if ev.Arguments != "" {
			out = append(out, event{Type: toolArgs, ToolCallID: ev.CallID, Delta: ev.Arguments})
		}
		out = append(out, event{Type: toolEnd, ToolCallID: ev.CallID})
	case agent.EventApprovalRequest:
		if _, ok := p.asked[ev.CallID]; !ok {
			p.order = append(p.order, ev.CallID)
		}
		p.asked[ev.CallID] = interrupt{ID: ev.CallID, Reason: "tool_call", ToolCallID: ev.CallID, ResponseSchema: approvalSchema,
			Message: fmt.Sprintf("Allow %s with %s?", ev.Name, agent.Shorten(ev.Arguments, 500))}
	case agent.EventApproval:
		delete(p.asked, ev.CallID)
	case agent.EventToolResult:
		s := ev.Result
		out = append(out, event{Type: toolResult, MessageID: resultMessageID(ev.CallID), ToolCallID: ev.CallID, Content: &s, Role: "tool"})
	case agent.EventError:
		out = p.closeParts(out)
		p.failed, p.done = true, true
		msg := ev.Error
		if msg == "" {
			msg = ev.Code
		}
		return append(out, event{Type: runError, Message: msg, Code: ev.Code})
	case agent.EventInterrupted:
		p.interrupted = true
	case agent.EventEnd:
		if p.failed {
			return nil // RUN_ERROR ended the run
		}
		out = p.closeParts(out)
		o := &outcome{Type: "success"}
		if p.interrupted {
			o.Type = "cancelled"
		}
		f := event{Type: runFinished, ThreadID: p.threadID, RunID: p.runID, Outcome: o}
		if u := ev.Usage; u != nil {
			f.Usage = []usage{{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}}
		}
		p.done = true
		return append(out, f)
	}
	return out
}

// parked returns the events that end a run whose turn now waits for
// decisions on waiting, once every one of them was asked in this run:
// RUN_FINISHED with an interrupt outcome. nil otherwise.
func (p *projection) parked(waiting []string) []event {
	if p.done || len(waiting) == 0 {
		return nil
	}
	for _, id := range waiting {
		if _, ok := p.asked[id]; !ok {
			return nil
		}
	}
	o := &outcome{Type: "interrupt"}
	for _, id := range p.order {
		if in, ok := p.asked[id]; ok {
			o.Interrupts = append(o.Interrupts, in)
		}
	}
	p.done = true
	return append(p.closeParts(nil), event{Type: runFinished, ThreadID: p.threadID, RunID: p.runID, Outcome: o})
}

func (p *projection) closeText(out []event) []event {
	if p.text != "" {
		out = append(out, event{Type: textEnd, MessageID: p.text})
		p.text = ""
	}
	return out
}

func (p *projection) closeReasoning(out []event) []event {
	if p.reasoning != "" {
		out = append(out, event{Type: reasoningMsgEnd, MessageID: p.reasoning}, event{Type: reasoningEnd, MessageID: p.reasoning})
		p.reasoning = ""
	}
	return out
}

func (p *projection) closeParts(out []event) []event { return p.closeText(p.closeReasoning(out)) }
