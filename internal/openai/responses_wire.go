package openai

import (
	"encoding/json"

	"github.com/agentik/agentik/internal/agent"
)

// The wire shapes of the Responses API (DESIGN §11.4), as far as agentik
// writes them: the Response object, its output items and the streaming
// events. Field sets follow the openai SDK's types; each shape writes the
// fields its type requires, null where agentik has no value.

// Response statuses.
const (
	statusQueued     = "queued"
	statusInProgress = "in_progress"
	statusCompleted  = "completed"
	statusFailed     = "failed"
	statusCancelled  = "cancelled"
)

// Response is the Response object.
type Response struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int64             `json:"created_at"`
	CompletedAt        *int64            `json:"completed_at"`
	Status             string            `json:"status"`
	Background         bool              `json:"background"`
	Error              *ResponseError    `json:"error"`
	IncompleteDetails  *json.RawMessage  `json:"incomplete_details"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Model              string            `json:"model"`
	Output             []*Item           `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Conversation       *ConversationRef  `json:"conversation"`
	Reasoning          ReasoningConfig   `json:"reasoning"`
	Store              bool              `json:"store"`
	Temperature        *float64          `json:"temperature"`
	Text               TextConfig        `json:"text"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Tools              []json.RawMessage `json:"tools"`
	TopP               *float64          `json:"top_p"`
	Truncation         string            `json:"truncation"`
	Usage              *ResponseUsage    `json:"usage"`
	User               *string           `json:"user"`
	Metadata           map[string]string `json:"metadata"`
	// OutputText is the SDKs' convenience: the text of every message item.
	OutputText string `json:"output_text"`
}

// ResponseError is a failed response's error, in OpenAI's shape: its type
// (server_error, invalid_request_error…, as errorType names it) is
// required by clients that validate the object (@ai-sdk/openai).
type ResponseError struct {
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ConversationRef names the conversation a response belongs to.
type ConversationRef struct {
	ID string `json:"id"`
}

// ReasoningConfig is the reasoning a request asked for.
type ReasoningConfig struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// TextConfig is the text output a request asked for.
type TextConfig struct {
	Format json.RawMessage `json:"format"`
}

// ResponseUsage is a response's token counts.
type ResponseUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

func usageOf(u agent.Usage) *ResponseUsage {
	return &ResponseUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
}

// Output item types.
const (
	itemMessage         = "message"
	itemReasoning       = "reasoning"
	itemFunctionCall    = "function_call"
	itemMCPCall         = "mcp_call"
	itemFileSearch      = "file_search_call"
	itemMCPApprovalReq  = "mcp_approval_request"
	itemFunctionOutput  = "function_call_output"
	itemMCPApprovalResp = "mcp_approval_response"
)

// Item is one output (or input) item. Type selects the fields its JSON
// carries (MarshalJSON).
type Item struct {
	ID     string
	Type   string
	Status string // message, reasoning, function_call, mcp_call
	Role   string // message

	Content []Part // message: output_text (assistant) or input_text parts
	Summary []Part // reasoning: summary_text parts

	CallID      string // function_call, function_call_output
	Name        string // function_call, mcp_call, mcp_approval_request
	Arguments   string // function_call, mcp_call, mcp_approval_request
	ServerLabel string // mcp_call, mcp_approval_request
	Output      *string
	Error       *string
	// ApprovalRequestID is the mcp_approval_request an mcp_call (or an
	// mcp_approval_response) answers.
	ApprovalRequestID *string
	Approve           bool     // mcp_approval_response
	Reason            string   // mcp_approval_response
	Queries           []string // file_search_call
}

// Part is one content part.
type Part struct {
	Type string `json:"type"`
	Text string `json:"text"`
	// Annotations of an assistant's output_text: file_citation for each
	// passage the answer was given (file_search).
	Annotations []Annotation `json:"-"`
	// FileID and Filename are an input_file's: a file the message attached.
	FileID   string `json:"-"`
	Filename string `json:"-"`
}

// userParts are a stored user message's content as Responses input
// parts: input_text, and input_file for each attached file.
func userParts(content []agent.Content) []Part {
	out := []Part{}
	for _, c := range content {
		switch c.Type {
		case agent.ContentText:
			out = append(out, Part{Type: "input_text", Text: c.Body})
		case agent.ContentFile:
			out = append(out, Part{Type: "input_file", FileID: c.FileID, Filename: c.Name})
		}
	}
	return out
}

// Annotation is a file_citation of an output_text.
type Annotation struct {
	Type     string `json:"type"`
	FileID   string `json:"file_id"`
	Filename string `json:"filename"`
	Index    int    `json:"index"`
}

// MarshalJSON writes the fields of the item's type.
func (it *Item) MarshalJSON() ([]byte, error) {
	m := map[string]any{"id": it.ID, "type": it.Type}
	parts := func(ps []Part, annotate bool) []any {
		out := make([]any, 0, len(ps))
		for _, p := range ps {
			if annotate {
				ann := []Annotation{}
				if p.Annotations != nil {
					ann = p.Annotations
				}
				out = append(out, map[string]any{"type": p.Type, "text": p.Text, "annotations": ann, "logprobs": []any{}})
			} else if p.Type == "input_file" {
				out = append(out, map[string]any{"type": p.Type, "file_id": p.FileID, "filename": p.Filename})
			} else {
				out = append(out, p)
			}
		}
		return out
	}
	switch it.Type {
	case itemMessage:
		m["role"], m["status"] = it.Role, it.Status
		m["content"] = parts(it.Content, it.Role == "assistant")
	case itemReasoning:
		m["summary"] = parts(it.Summary, false)
		if it.Status != "" {
			m["status"] = it.Status
		}
	case itemFunctionCall:
		m["call_id"], m["name"], m["arguments"], m["status"] = it.CallID, it.Name, it.Arguments, it.Status
	case itemFunctionOutput:
		m["call_id"], m["output"] = it.CallID, it.Output
		if it.Status != "" {
			m["status"] = it.Status
		}
	case itemMCPCall:
		m["server_label"], m["name"], m["arguments"], m["status"] = it.ServerLabel, it.Name, it.Arguments, it.Status
		m["output"], m["error"], m["approval_request_id"] = it.Output, it.Error, it.ApprovalRequestID
	case itemFileSearch:
		m["status"], m["queries"], m["results"] = it.Status, it.Queries, nil
	case itemMCPApprovalReq:
		m["server_label"], m["name"], m["arguments"] = it.ServerLabel, it.Name, it.Arguments
	case itemMCPApprovalResp:
		m["approval_request_id"], m["approve"] = it.ApprovalRequestID, it.Approve
		if it.Reason != "" {
			m["reason"] = it.Reason
		}
	}
	return json.Marshal(m)
}

// clone copies the item (its parts too): a stream event carries the item
// as it was then.
func (it *Item) clone() *Item {
	c := *it
	c.Content = append([]Part(nil), it.Content...)
	c.Summary = append([]Part(nil), it.Summary...)
	return &c
}

// StreamEvent is one server-sent event of a response's stream.
type StreamEvent struct {
	Type           string    `json:"type"`
	SequenceNumber int       `json:"sequence_number"`
	Response       *Response `json:"response,omitempty"`
	OutputIndex    *int      `json:"output_index,omitempty"`
	ItemID         string    `json:"item_id,omitempty"`
	ContentIndex   *int      `json:"content_index,omitempty"`
	SummaryIndex   *int      `json:"summary_index,omitempty"`
	Item           *Item     `json:"item,omitempty"`
	Part           *Part     `json:"part,omitempty"`
	Delta          *string   `json:"delta,omitempty"`
	Text           *string   `json:"text,omitempty"`
	Arguments      *string   `json:"arguments,omitempty"`
	Name           string    `json:"name,omitempty"`
	Logprobs       *[]any    `json:"logprobs,omitempty"`
	// An error event's fields.
	Code    string  `json:"code,omitempty"`
	Message string  `json:"message,omitempty"`
	Param   *string `json:"param,omitempty"`
}

// Stream event types.
const (
	evCreated          = "response.created"
	evInProgress       = "response.in_progress"
	evCompleted        = "response.completed"
	evFailed           = "response.failed"
	evIncomplete       = "response.incomplete"
	evItemAdded        = "response.output_item.added"
	evItemDone         = "response.output_item.done"
	evPartAdded        = "response.content_part.added"
	evPartDone         = "response.content_part.done"
	evTextDelta        = "response.output_text.delta"
	evTextDone         = "response.output_text.done"
	evSummaryPartAdded = "response.reasoning_summary_part.added"
	evSummaryPartDone  = "response.reasoning_summary_part.done"
	evSummaryDelta     = "response.reasoning_summary_text.delta"
	evSummaryDone      = "response.reasoning_summary_text.done"
	evArgsDelta        = "response.function_call_arguments.delta"
	evArgsDone         = "response.function_call_arguments.done"
	evMCPArgsDelta     = "response.mcp_call_arguments.delta"
	evMCPArgsDone      = "response.mcp_call_arguments.done"
	evMCPInProgress    = "response.mcp_call.in_progress"
	evMCPCompleted     = "response.mcp_call.completed"
	evMCPFailed        = "response.mcp_call.failed"
	evFSInProgress     = "response.file_search_call.in_progress"
	evFSSearching      = "response.file_search_call.searching"
	evFSCompleted      = "response.file_search_call.completed"
)
