package openai

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// A response is a segment of its conversation's event log: the events
// after its stored cursor (the seq before its turn's first event, or the
// end of the response it answers approvals of), up to the turn's end, or
// up to the approval requests the turn parks on. The projector folds that
// segment into the Response object and its stream events. It is a pure
// function of the events and of what the response stored of its request
// (its Echo): the same events give the same objects, the same item ids and
// the same sequence numbers, live, replayed, or recomputed after a
// restart. That is what makes `starting_after` exact: sequence numbers are
// positions in a stream that is computed again, never remembered.

// Echo is what a response keeps of its request: the fields of the Response
// object the request set. It is stored as JSON with the response.
type Echo struct {
	Model              string            `json:"model"`
	Instructions       *string           `json:"instructions,omitempty"`
	MaxOutputTokens    *int              `json:"max_output_tokens,omitempty"`
	Temperature        *float64          `json:"temperature,omitempty"`
	TopP               *float64          `json:"top_p,omitempty"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID string            `json:"previous_response_id,omitempty"`
	Reasoning          ReasoningConfig   `json:"reasoning"`
	Format             json.RawMessage   `json:"format,omitempty"`
	ToolChoice         json.RawMessage   `json:"tool_choice,omitempty"`
	Tools              []json.RawMessage `json:"tools,omitempty"`
	// ClientTools are the names of the request's function tools: a call of
	// one is a function_call item, any other a server-side mcp_call.
	ClientTools []string `json:"client_tools,omitempty"`
	// Approved are the tool calls (name and arguments, by call id) whose
	// approval requests this response answers: their mcp_call items show
	// the arguments, which the response's own events do not carry.
	Approved   map[string]agent.ToolCall `json:"approved,omitempty"`
	Metadata   map[string]string         `json:"metadata,omitempty"`
	Background bool                      `json:"background,omitempty"`
	Truncation string                    `json:"truncation,omitempty"`
	User       *string                   `json:"user,omitempty"`
}

// Prefixes of the ids agentik derives from stored ids.
const (
	prefixResponse   = "resp_"
	prefixMessage    = "msg_"
	prefixReasoning  = "rs_"
	prefixFunction   = "fc_"
	prefixMCPCall    = "mcp_"
	prefixFileSearch = "fs_"
	prefixApproval   = "mcpr_"
	// Of input items.
	prefixFunctionOutput   = "fco_"
	prefixApprovalResponse = "mcpa_"
)

// approvalItemID is the id of the mcp_approval_request item of a tool
// call: the call id is in it, so an mcp_approval_response names its call.
func approvalItemID(callID string) string { return prefixApproval + callID }

// splitToolName is the server label and tool name of an MCP tool as the
// model sees it (<server>__<tool>).
func splitToolName(name string) (server, tool string) {
	if s, t, ok := strings.Cut(name, "__"); ok && s != "" && t != "" {
		return s, t
	}
	return "agentik", name
}

// projector folds one response's events; see the top of the file.
type projector struct {
	resp   Response
	client map[string]bool // the request's function tools
	seq    int             // the next event's sequence_number
	out    []StreamEvent   // events of the current step

	open int // output index of the reasoning or message item being streamed; -1: none
	// text is the open item's text so far (its part's Text is set when it
	// closes, and in snapshots): appending to a string would copy it all
	// for every delta.
	text strings.Builder
	// calls are the tool calls seen in this segment, by call id (an
	// mcp_call item is written once its result is in).
	calls    map[string]agent.Event
	approved map[string]string // call id → the decision made in this segment
	// cont: the segment continues a turn (it began with a decision), so
	// the turn's end usage counts earlier responses too.
	cont        bool
	first       bool // no event seen yet
	answerUsage agent.Usage
	failed      *ResponseError
	interrupted bool
	// waiting: the last event was an approval request; the segment ends
	// there when the turn parks (the caller knows, see parked).
	waiting bool
	done    bool
	last    int64 // seq of the last event folded in: where a response that follows this one starts
	// lastMessage is the id of the last message the segment wrote: where
	// a response continuing this one follows.
	lastMessage string
	// inputs are the new input the response answered (input_items), read
	// from the segment's first events.
	inputs  []*Item
	started bool // an output event came: no more input
}

func newProjector(id, conversationID string, temp bool, created time.Time, e Echo) *projector {
	p := &projector{open: -1, calls: map[string]agent.Event{}, approved: map[string]string{}, client: map[string]bool{}, first: true}
	for _, n := range e.ClientTools {
		p.client[n] = true
	}
	for id, c := range e.Approved {
		p.calls[id] = agent.Event{Type: agent.EventToolCall, CallID: id, Name: c.Name, Arguments: c.Arguments}
	}
	r := &p.resp
	*r = Response{
		ID: id, Object: "response", CreatedAt: created.Unix(), Status: statusInProgress, Background: e.Background,
		Instructions: e.Instructions, MaxOutputTokens: e.MaxOutputTokens, Model: e.Model, Output: []*Item{},
		ParallelToolCalls: e.ParallelToolCalls, Reasoning: e.Reasoning, Store: !temp,
		Temperature: e.Temperature, TopP: e.TopP, Truncation: "disabled", User: e.User, Metadata: e.Metadata,
		ToolChoice: e.ToolChoice, Tools: e.Tools, Text: TextConfig{Format: e.Format},
	}
	if e.PreviousResponseID != "" {
		r.PreviousResponseID = &e.PreviousResponseID
	}
	if !temp {
		r.Conversation = &ConversationRef{ID: conversationID}
	}
	if e.Truncation != "" {
		r.Truncation = e.Truncation
	}
	if r.Metadata == nil {
		r.Metadata = map[string]string{}
	}
	if r.Tools == nil {
		r.Tools = []json.RawMessage{}
	}
	if len(r.ToolChoice) == 0 {
		r.ToolChoice = json.RawMessage(`"auto"`)
	}
	if len(r.Text.Format) == 0 {
		r.Text.Format = json.RawMessage(`{"type":"text"}`)
	}
	return p
}

// snapshot is the Response as it is now.
func (p *projector) snapshot() *Response {
	r := p.resp
	r.Output = make([]*Item, len(p.resp.Output))
	var text strings.Builder
	for i, it := range p.resp.Output {
		r.Output[i] = it.clone()
		if i == p.open {
			p.setText(r.Output[i])
		}
		it := r.Output[i]
		if it.Type == itemMessage {
			for _, c := range it.Content {
				text.WriteString(c.Text)
			}
		}
	}
	r.OutputText = text.String()
	return &r
}

func (p *projector) emit(ev StreamEvent) {
	ev.SequenceNumber = p.seq
	p.seq++
	p.out = append(p.out, ev)
}

func ptr[T any](v T) *T { return &v }

// start is the stream's first events: created and in_progress.
func (p *projector) start() []StreamEvent {
	p.out = nil
	p.emit(StreamEvent{Type: evCreated, Response: p.snapshot()})
	p.emit(StreamEvent{Type: evInProgress, Response: p.snapshot()})
	return p.take()
}

func (p *projector) take() []StreamEvent {
	out := p.out
	p.out = nil
	return out
}

// add appends an output item and announces it.
func (p *projector) add(it *Item) int {
	p.resp.Output = append(p.resp.Output, it)
	i := len(p.resp.Output) - 1
	p.emit(StreamEvent{Type: evItemAdded, OutputIndex: ptr(i), Item: it.clone()})
	return i
}

// closeOpen finishes the item being streamed.
func (p *projector) closeOpen(status string) {
	if p.open < 0 {
		return
	}
	i := p.open
	it := p.resp.Output[i]
	p.setText(it)
	p.open = -1
	p.text.Reset()
	switch it.Type {
	case itemReasoning:
		part := it.Summary[0]
		p.emit(StreamEvent{Type: evSummaryDone, ItemID: it.ID, OutputIndex: ptr(i), SummaryIndex: ptr(0), Text: ptr(part.Text)})
		p.emit(StreamEvent{Type: evSummaryPartDone, ItemID: it.ID, OutputIndex: ptr(i), SummaryIndex: ptr(0), Part: &part})
	case itemMessage:
		part := it.Content[0]
		p.emit(StreamEvent{Type: evTextDone, ItemID: it.ID, OutputIndex: ptr(i), ContentIndex: ptr(0), Text: ptr(part.Text), Logprobs: &[]any{}})
		p.emit(StreamEvent{Type: evPartDone, ItemID: it.ID, OutputIndex: ptr(i), ContentIndex: ptr(0), Part: &part})
		it.Status = status
	}
	p.emit(StreamEvent{Type: evItemDone, OutputIndex: ptr(i), Item: it.clone()})
}

// setText puts the open item's text into it (or a clone of it).
func (p *projector) setText(it *Item) {
	switch {
	case it.Type == itemReasoning && len(it.Summary) > 0:
		it.Summary[0].Text = p.text.String()
	case it.Type == itemMessage && len(it.Content) > 0:
		it.Content[0].Text = p.text.String()
	}
}

func (p *projector) openReasoning(eventID string) {
	p.closeOpen(statusCompleted)
	it := &Item{ID: prefixReasoning + eventID, Type: itemReasoning}
	i := p.add(it)
	it.Summary = []Part{{Type: "summary_text"}}
	p.emit(StreamEvent{Type: evSummaryPartAdded, ItemID: it.ID, OutputIndex: ptr(i), SummaryIndex: ptr(0), Part: &Part{Type: "summary_text"}})
	p.open = i
}

func (p *projector) openMessage(eventID string) {
	p.closeOpen(statusCompleted)
	it := &Item{ID: prefixMessage + eventID, Type: itemMessage, Role: "assistant", Status: statusInProgress, Content: []Part{}}
	i := p.add(it)
	it.Content = []Part{{Type: "output_text"}}
	p.emit(StreamEvent{Type: evPartAdded, ItemID: it.ID, OutputIndex: ptr(i), ContentIndex: ptr(0), Part: &Part{Type: "output_text"}})
	p.open = i
}

// on folds one event of the segment and returns the stream events it
// makes (none once the segment ended).
func (p *projector) on(all *agent.AllEvent) []StreamEvent {
	if p.done || all.Event == nil {
		return nil
	}
	ev := all.Event
	if p.waiting && ev.Type != agent.EventApprovalRequest {
		// The turn parked after those requests: this event belongs to
		// the response that answers them.
		return p.parked()
	}
	first := p.first
	p.first = false
	if all.Seq > 0 {
		p.last = all.Seq
	}
	switch ev.Type {
	case agent.EventMessage, agent.EventApproval:
	default:
		p.started = true
	}
	switch ev.Type {
	case agent.EventStartReasoning:
		p.openReasoning(all.ID)
	case agent.EventStartResponse:
		p.openMessage(all.ID)
	case agent.EventAppendText:
		if p.open < 0 {
			p.openMessage(all.ID)
		}
		it := p.resp.Output[p.open]
		i := p.open
		p.text.WriteString(ev.Text)
		if it.Type == itemReasoning {
			p.emit(StreamEvent{Type: evSummaryDelta, ItemID: it.ID, OutputIndex: ptr(i), SummaryIndex: ptr(0), Delta: ptr(ev.Text)})
		} else {
			p.emit(StreamEvent{Type: evTextDelta, ItemID: it.ID, OutputIndex: ptr(i), ContentIndex: ptr(0), Delta: ptr(ev.Text), Logprobs: &[]any{}})
		}
	case agent.EventToolCall:
		p.closeOpen(statusCompleted)
		p.calls[ev.CallID] = *ev
		if p.client[ev.Name] {
			it := &Item{ID: prefixFunction + all.ID, Type: itemFunctionCall, CallID: ev.CallID, Name: ev.Name, Status: statusInProgress}
			i := p.add(it)
			it.Arguments = ev.Arguments
			p.emit(StreamEvent{Type: evArgsDelta, ItemID: it.ID, OutputIndex: ptr(i), Delta: ptr(ev.Arguments)})
			p.emit(StreamEvent{Type: evArgsDone, ItemID: it.ID, OutputIndex: ptr(i), Name: ev.Name, Arguments: ptr(ev.Arguments)})
			it.Status = statusCompleted
			p.emit(StreamEvent{Type: evItemDone, OutputIndex: ptr(i), Item: it.clone()})
		}
	case agent.EventApproval:
		if first {
			p.cont = true
		}
		p.approved[ev.CallID] = ev.Decision
		if !p.started {
			p.inputs = append(p.inputs, &Item{ID: prefixApprovalResponse + all.ID, Type: itemMCPApprovalResp,
				ApprovalRequestID: ptr(approvalItemID(ev.CallID)), Approve: ev.Decision == agent.DecisionApprove, Reason: ev.Reason})
		}
		if c, ok := p.calls[ev.CallID]; ok && ev.Arguments != "" {
			c.Arguments = ev.Arguments
			p.calls[ev.CallID] = c
		}
	case agent.EventToolResult:
		p.closeOpen(statusCompleted)
		if p.client[ev.Name] {
			break
		}
		if ev.Name == agent.ToolFileSearch {
			p.fileSearchCall(all.ID, ev)
			break
		}
		p.mcpCall(all.ID, ev)
	case agent.EventApprovalRequest:
		p.closeOpen(statusCompleted)
		server, tool := splitToolName(ev.Name)
		it := &Item{ID: approvalItemID(ev.CallID), Type: itemMCPApprovalReq, ServerLabel: server, Name: tool, Arguments: ev.Arguments}
		i := p.add(it)
		p.emit(StreamEvent{Type: evItemDone, OutputIndex: ptr(i), Item: it.clone()})
		p.waiting = true
		p.resp.CompletedAt = ptr(all.Date.Unix())
	case agent.EventMessage:
		m := ev.Message
		if m == nil {
			break
		}
		p.lastMessage = m.ID
		switch {
		case m.Type == agent.MessageAssistant && (m.Usage != nil || len(m.Citations) > 0):
			if m.Usage != nil {
				p.answerUsage = p.answerUsage.Add(*m.Usage)
			}
			p.annotate(m.Citations)
		case m.Type == agent.MessageUser && !p.started:
			it := &Item{ID: prefixMessage + m.ID, Type: itemMessage, Role: "user", Status: statusCompleted, Content: userParts(m.Content)}
			p.inputs = append(p.inputs, it)
		case m.Type == agent.MessageToolResult && !p.started:
			p.inputs = append(p.inputs, &Item{ID: prefixFunctionOutput + m.ID, Type: itemFunctionOutput, CallID: m.CallID, Output: ptr(m.Result), Status: statusCompleted})
		}
	case agent.EventError:
		code := ev.Code
		if code == "" {
			code = agent.CodeModelError
		}
		p.failed = &ResponseError{Type: errorType(protocol.HTTPStatus(code)), Code: code, Message: ev.Error}
	case agent.EventInterrupted:
		p.interrupted = true
	case agent.EventEnd:
		p.finish(all, ev)
	}
	return p.take()
}

// mcpCall writes the item of a server-side tool call once its result is
// in: a call waiting for approval shows as its approval request only, as
// OpenAI's hosted MCP does, and the call itself once decided and run.
func (p *projector) mcpCall(eventID string, ev *agent.Event) {
	server, tool := splitToolName(ev.Name)
	call := p.calls[ev.CallID]
	it := &Item{ID: prefixMCPCall + eventID, Type: itemMCPCall, ServerLabel: server, Name: tool, Status: statusInProgress}
	if _, ok := p.approved[ev.CallID]; ok {
		it.ApprovalRequestID = ptr(approvalItemID(ev.CallID))
	}
	i := p.add(it)
	it.Arguments = call.Arguments
	p.emit(StreamEvent{Type: evMCPArgsDelta, ItemID: it.ID, OutputIndex: ptr(i), Delta: ptr(call.Arguments)})
	p.emit(StreamEvent{Type: evMCPArgsDone, ItemID: it.ID, OutputIndex: ptr(i), Arguments: ptr(call.Arguments)})
	p.emit(StreamEvent{Type: evMCPInProgress, ItemID: it.ID, OutputIndex: ptr(i)})
	if ev.IsError {
		it.Status, it.Error = statusFailed, ptr(ev.Result)
		p.emit(StreamEvent{Type: evMCPFailed, ItemID: it.ID, OutputIndex: ptr(i)})
	} else {
		it.Status, it.Output = statusCompleted, ptr(ev.Result)
		p.emit(StreamEvent{Type: evMCPCompleted, ItemID: it.ID, OutputIndex: ptr(i)})
	}
	p.emit(StreamEvent{Type: evItemDone, OutputIndex: ptr(i), Item: it.clone()})
}

// fileSearchCall writes the file_search_call item of a file_search call
// once its result is in: its query, searched and completed.
func (p *projector) fileSearchCall(eventID string, ev *agent.Event) {
	call := p.calls[ev.CallID]
	var args struct {
		Query string `json:"query"`
	}
	_ = json.Unmarshal([]byte(call.Arguments), &args)
	it := &Item{ID: prefixFileSearch + eventID, Type: itemFileSearch, Status: statusInProgress, Queries: []string{args.Query}}
	i := p.add(it)
	p.emit(StreamEvent{Type: evFSInProgress, ItemID: it.ID, OutputIndex: ptr(i)})
	p.emit(StreamEvent{Type: evFSSearching, ItemID: it.ID, OutputIndex: ptr(i)})
	it.Status = statusCompleted
	if ev.IsError {
		it.Status = statusFailed
	}
	p.emit(StreamEvent{Type: evFSCompleted, ItemID: it.ID, OutputIndex: ptr(i)})
	p.emit(StreamEvent{Type: evItemDone, OutputIndex: ptr(i), Item: it.clone()})
}

// annotate gives the assistant message being written a file_citation
// per citation of its answer, at the end of its text.
func (p *projector) annotate(cs []agent.Citation) {
	if len(cs) == 0 {
		return
	}
	for i := len(p.resp.Output) - 1; i >= 0; i-- {
		it := p.resp.Output[i]
		if it.Type != itemMessage || it.Role != "assistant" || len(it.Content) == 0 {
			continue
		}
		end := len([]rune(p.text.String()))
		if p.open != i {
			end = len([]rune(it.Content[0].Text))
		}
		anns := make([]Annotation, len(cs))
		for j, c := range cs {
			anns[j] = Annotation{Type: "file_citation", FileID: c.FileID, Filename: c.FileName, Index: end}
		}
		it.Content[0].Annotations = anns
		return
	}
}

// finish ends the response at its turn's end.
func (p *projector) finish(all *agent.AllEvent, ev *agent.Event) {
	status := statusCompleted
	switch {
	case p.failed != nil:
		status = statusFailed
	case p.interrupted:
		status = statusCancelled
	}
	itemStatus := statusCompleted
	if status != statusCompleted {
		itemStatus = "incomplete"
	}
	p.closeOpen(itemStatus)
	u := p.answerUsage
	if ev.Usage != nil && !p.cont {
		u = *ev.Usage
	}
	p.end(status, all.Date, u)
}

// parked ends the response where its turn waits for approvals: completed,
// its output ending with the mcp_approval_request items, as OpenAI's
// hosted MCP ends a response that needs an approval.
func (p *projector) parked() []StreamEvent {
	if p.done || !p.waiting {
		return nil
	}
	at := time.Unix(*p.resp.CompletedAt, 0)
	p.end(statusCompleted, at, p.answerUsage)
	return p.take()
}

func (p *projector) end(status string, at time.Time, u agent.Usage) {
	p.done = true
	p.waiting = false
	r := &p.resp
	r.Status = status
	r.CompletedAt = ptr(at.Unix())
	r.Usage = usageOf(u)
	r.Error = p.failed
	t := evCompleted
	switch status {
	case statusFailed:
		t = evFailed
	case statusCancelled:
		t = evIncomplete
	}
	p.emit(StreamEvent{Type: t, Response: p.snapshot()})
}
