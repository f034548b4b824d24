package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/agentik/agentik/internal/agent"
)

// The body of POST /v1/responses, as far as agentik reads it, and its
// checks. Every check runs before anything is written: a refused request
// stores nothing.

// responseParams are the fields agentik reads; responseIgnored those it
// accepts and ignores (they tune OpenAI's service, not the answer). Any
// other field is refused naming it, so a client never silently loses what
// it asked for.
var (
	responseParams = []string{"model", "input", "instructions", "previous_response_id", "conversation", "stream", "background", "store",
		"tools", "tool_choice", "parallel_tool_calls", "text", "reasoning", "max_output_tokens", "temperature", "top_p", "metadata",
		"include", "truncation", "user", "prompt", "top_logprobs", "context_management"}
	responseIgnored = []string{"stream_options", "safety_identifier", "prompt_cache_key", "prompt_cache_retention", "prompt_cache_options",
		"service_tier", "max_tool_calls"}
	// includable are the include values agentik accepts: what it has is
	// always in the answer, what it has not is never.
	includable = []string{"reasoning.encrypted_content", "message.output_text.logprobs", "message.input_image.image_url",
		"file_search_call.results", "web_search_call.results", "web_search_call.action.sources", "code_interpreter_call.outputs",
		"computer_call_output.output.image_url"}
)

// formatName is what a json_schema format may be called (OpenAI's rule).
var formatName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// responseRequest is the decoded body.
type responseRequest struct {
	Model              string            `json:"model"`
	Input              json.RawMessage   `json:"input"`
	Instructions       *string           `json:"instructions"`
	PreviousResponseID string            `json:"previous_response_id"`
	Conversation       json.RawMessage   `json:"conversation"`
	Stream             bool              `json:"stream"`
	Background         bool              `json:"background"`
	Store              *bool             `json:"store"`
	Tools              []json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls  *bool             `json:"parallel_tool_calls"`
	Text               *struct {
		Format    json.RawMessage `json:"format"`
		Verbosity *string         `json:"verbosity"`
	} `json:"text"`
	Reasoning *struct {
		Effort  *string `json:"effort"`
		Summary *string `json:"summary"`
	} `json:"reasoning"`
	MaxOutputTokens   *int              `json:"max_output_tokens"`
	Temperature       *float64          `json:"temperature"`
	TopP              *float64          `json:"top_p"`
	Metadata          map[string]string `json:"metadata"`
	Include           []string          `json:"include"`
	Truncation        *string           `json:"truncation"`
	User              *string           `json:"user"`
	Prompt            json.RawMessage   `json:"prompt"`
	TopLogprobs       *int              `json:"top_logprobs"`
	ContextManagement json.RawMessage   `json:"context_management"`
}

// responseCall is a parsed request.
type responseCall struct {
	echo         Echo
	stream       bool
	background   bool
	store        bool
	previous     string // previous_response_id
	conversation string // conversation id
	format       *agent.ResponseFormat
	toolChoice   *agent.ToolChoice
	effort       string
	parallel     bool // parallel_tool_calls, true unless the request said false
	// history is the input before its new part, for a new conversation;
	// a continued one takes only new input.
	history []agent.ModelMessage
	input   agent.StartInput
	// approvals answer mcp_approval_request items (input of a
	// continued conversation only).
	approvals []agent.ApprovalInput
	// outputs is the field of each function_call_output, by call id, to
	// name it when its call is unknown.
	outputs map[string]string
	// calls are the call ids of the function_call items in the history.
	calls map[string]bool
}

// maxMetadata bounds metadata as OpenAI does.
const (
	maxMetadata      = 16
	maxMetadataKey   = 64
	maxMetadataValue = 512
)

func (h *Handler) parseResponse(ctx context.Context, body []byte) (responseCall, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return responseCall{}, badParam("", "the body must be a JSON object")
	}
	names := make([]string, 0, len(raw))
	for k := range raw {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !contains(responseParams, k) && !contains(responseIgnored, k) {
			return responseCall{}, badParam(k, "unsupported parameter %q; agentik reads %s and ignores %s", k, strings.Join(responseParams, ", "), strings.Join(responseIgnored, ", "))
		}
	}
	var req responseRequest
	if err := json.Unmarshal(body, &req); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return responseCall{}, badParam(te.Field, "%s must be %s, not %s", te.Field, te.Type.String(), te.Value)
		}
		return responseCall{}, badParam("", "the body must be a JSON object: %v", err)
	}
	c := responseCall{stream: req.Stream, background: req.Background, store: req.Store == nil || *req.Store,
		previous: req.PreviousResponseID, outputs: map[string]string{}, calls: map[string]bool{}}
	if err := h.checkModel(ctx, req.Model); err != nil {
		return responseCall{}, err
	}
	e := &c.echo
	e.Model, e.Instructions, e.Metadata, e.User = req.Model, req.Instructions, req.Metadata, req.User
	e.ParallelToolCalls = req.ParallelToolCalls == nil || *req.ParallelToolCalls
	c.parallel = e.ParallelToolCalls
	e.PreviousResponseID = req.PreviousResponseID
	e.Background = req.Background
	if c.background && !c.store {
		return responseCall{}, badParam("background", "background requires store: true (a background response is read back later)")
	}
	if len(req.Prompt) > 0 && string(req.Prompt) != "null" {
		return responseCall{}, badParam("prompt", "prompt templates are not supported: send instructions and input instead")
	}
	if len(req.ContextManagement) > 0 && string(req.ContextManagement) != "null" {
		return responseCall{}, badParam("context_management", "context_management is not supported: agentik compacts a conversation's context itself")
	}
	if req.TopLogprobs != nil && *req.TopLogprobs != 0 {
		return responseCall{}, badParam("top_logprobs", "top_logprobs is not supported, got %d", *req.TopLogprobs)
	}
	if t := req.Truncation; t != nil {
		if *t != "auto" && *t != "disabled" {
			return responseCall{}, badParam("truncation", "truncation must be \"auto\" or \"disabled\", got %q", agent.Shorten(*t, 40))
		}
		e.Truncation = *t
	}
	for i, inc := range req.Include {
		if !contains(includable, inc) {
			return responseCall{}, badParam(fmt.Sprintf("include[%d]", i), "include[%d] %q is not a known value (%s)", i, agent.Shorten(inc, 60), strings.Join(includable, ", "))
		}
	}
	if err := checkMetadata(req.Metadata); err != nil {
		return responseCall{}, err
	}
	if n := req.MaxOutputTokens; n != nil && *n < 1 {
		return responseCall{}, badParam("max_output_tokens", "max_output_tokens must be 1 or more, got %d", *n)
	}
	if t := req.Temperature; t != nil && (math.IsNaN(*t) || *t < 0 || *t > 2) {
		return responseCall{}, badParam("temperature", "temperature must be between 0 and 2, got %g", *t)
	}
	if t := req.TopP; t != nil && (math.IsNaN(*t) || *t < 0 || *t > 1) {
		return responseCall{}, badParam("top_p", "top_p must be between 0 and 1, got %g", *t)
	}
	e.MaxOutputTokens, e.Temperature, e.TopP = req.MaxOutputTokens, req.Temperature, req.TopP
	if req.Reasoning != nil {
		e.Reasoning = ReasoningConfig{Effort: req.Reasoning.Effort, Summary: req.Reasoning.Summary}
		if ef := req.Reasoning.Effort; ef != nil {
			if !contains(agent.ReasoningEfforts, *ef) {
				return responseCall{}, badParam("reasoning.effort", "reasoning.effort must be one of %s, got %q", strings.Join(agent.ReasoningEfforts, ", "), agent.Shorten(*ef, 40))
			}
			c.effort = *ef
		}
	}
	if req.Text != nil && len(req.Text.Format) > 0 && string(req.Text.Format) != "null" {
		f, err := parseFormat(req.Text.Format)
		if err != nil {
			return responseCall{}, err
		}
		e.Format = req.Text.Format
		if f.Type != agent.FormatText {
			c.format = f
		}
	}
	if err := c.parseTools(req.Tools); err != nil {
		return responseCall{}, err
	}
	if len(req.ToolChoice) > 0 && string(req.ToolChoice) != "null" {
		tc, err := parseToolChoice(req.ToolChoice, c.input.ClientTools)
		if err != nil {
			return responseCall{}, err
		}
		e.ToolChoice = req.ToolChoice
		if tc.Mode != agent.ToolChoiceAuto || len(tc.Allowed) > 0 {
			c.toolChoice = tc
		}
	}
	if len(req.Conversation) > 0 && string(req.Conversation) != "null" {
		id, err := conversationParam(req.Conversation)
		if err != nil {
			return responseCall{}, err
		}
		if c.previous != "" {
			return responseCall{}, badParam("conversation", "conversation and previous_response_id cannot both be given: a response continues one or the other")
		}
		if !c.store {
			return responseCall{}, badParam("store", "store: false cannot continue a stored conversation; leave store out or set it to true")
		}
		c.conversation = id
	}
	if c.previous != "" && !strings.HasPrefix(c.previous, prefixResponse) {
		return responseCall{}, &paramError{param: "previous_response_id", err: agent.Errorf(agent.CodeNotFound, "previous response %q not found", agent.Shorten(c.previous, 80))}
	}
	if c.previous != "" && !c.store {
		return responseCall{}, badParam("store", "store: false cannot continue a stored response; leave store out or set it to true")
	}
	items, err := parseInput(req.Input)
	if err != nil {
		return responseCall{}, err
	}
	if err := c.split(items, c.previous != "" || c.conversation != ""); err != nil {
		return responseCall{}, err
	}
	return c, nil
}

// checkModel refuses a model this server does not have.
func (h *Handler) checkModel(ctx context.Context, model string) error {
	if model == "" {
		return badParam("model", "model is required; GET /v1/models lists them")
	}
	if !h.known(ctx, model) {
		return h.unknownModel(model)
	}
	return nil
}

func checkMetadata(md map[string]string) error {
	if len(md) > maxMetadata {
		return badParam("metadata", "metadata has %d keys; at most %d are allowed", len(md), maxMetadata)
	}
	for k, v := range md {
		if len(k) > maxMetadataKey {
			return badParam("metadata", "metadata key %q is longer than %d characters", agent.Shorten(k, 80), maxMetadataKey)
		}
		if len(v) > maxMetadataValue {
			return badParam("metadata", "metadata[%q] is longer than %d characters", agent.Shorten(k, 80), maxMetadataValue)
		}
	}
	return nil
}

func conversationParam(raw json.RawMessage) (string, error) {
	var id string
	if json.Unmarshal(raw, &id) == nil && id != "" {
		return id, nil
	}
	var obj struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.ID != "" {
		return obj.ID, nil
	}
	return "", badParam("conversation", "conversation must be a conversation id or {\"id\": …}")
}

func parseFormat(raw json.RawMessage) (*agent.ResponseFormat, error) {
	var f struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, badParam("text.format", "text.format must be an object with a type")
	}
	switch f.Type {
	case agent.FormatText, agent.FormatJSONObject:
		return &agent.ResponseFormat{Type: f.Type}, nil
	case agent.FormatJSONSchema:
		if !formatName.MatchString(f.Name) {
			return nil, badParam("text.format.name", "text.format.name must be 1 to 64 letters, digits, _ or -, got %q", agent.Shorten(f.Name, 80))
		}
		var obj map[string]any
		if json.Unmarshal(f.Schema, &obj) != nil || obj == nil {
			return nil, badParam("text.format.schema", "text.format.schema must be a JSON Schema object")
		}
		return &agent.ResponseFormat{Type: f.Type, Name: f.Name, Description: f.Description, Schema: f.Schema, Strict: f.Strict != nil && *f.Strict}, nil
	}
	return nil, badParam("text.format.type", "text.format.type must be text, json_object or json_schema, got %q", agent.Shorten(f.Type, 40))
}

// parseTools reads the request's tools: functions only, which the client
// runs. agentik's own MCP tools are always offered besides them.
func (c *responseCall) parseTools(tools []json.RawMessage) error {
	for i, raw := range tools {
		var t struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      *bool           `json:"strict"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return badParam(fmt.Sprintf("tools[%d]", i), "tools[%d] must be an object", i)
		}
		if t.Type == "file_search" { // agentik's knowledge bases (files.go)
			var fsTool struct {
				VectorStoreIDs []string `json:"vector_store_ids"`
			}
			if err := json.Unmarshal(raw, &fsTool); err != nil || len(fsTool.VectorStoreIDs) == 0 {
				return badParam(fmt.Sprintf("tools[%d].vector_store_ids", i), "tools[%d] (file_search) needs vector_store_ids: the vector stores (vs_…) to search", i)
			}
			c.input.Knowledge = append(c.input.Knowledge, fsTool.VectorStoreIDs...)
			c.echo.Tools = append(c.echo.Tools, raw)
			continue
		}
		if t.Type != "function" {
			return badParam(fmt.Sprintf("tools[%d].type", i), "tools[%d].type must be \"function\" or \"file_search\", got %q: agentik runs its own MCP servers (mcp.json) itself and offers their tools to every response", i, agent.Shorten(t.Type, 40))
		}
		params := t.Parameters
		if string(params) == "null" {
			params = nil
		}
		c.input.ClientTools = append(c.input.ClientTools, agent.ToolSpec{Name: t.Name, Description: t.Description, Parameters: params})
		c.echo.ClientTools = append(c.echo.ClientTools, t.Name)
		c.echo.Tools = append(c.echo.Tools, raw)
	}
	if err := agent.CheckClientTools(c.input.ClientTools); err != nil {
		var e *agent.Error
		if errors.As(err, &e) {
			msg := strings.ReplaceAll(e.Message, ".function.name", ".name")
			msg = strings.ReplaceAll(msg, ".function.parameters", ".parameters")
			return &paramError{param: "tools", err: agent.Errorf(e.Code, "%s", msg)}
		}
		return err
	}
	return nil
}

// parseToolChoice reads tool_choice: a mode, one function or MCP tool
// (agentik's <server_label>__<name>), or allowed_tools. The runner checks
// that the tools it names exist.
func parseToolChoice(raw json.RawMessage, client []agent.ToolSpec) (*agent.ToolChoice, error) {
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		switch mode {
		case agent.ToolChoiceAuto, agent.ToolChoiceNone, agent.ToolChoiceRequired:
			return &agent.ToolChoice{Mode: mode}, nil
		}
		return nil, badParam("tool_choice", "tool_choice must be \"auto\", \"none\", \"required\" or an object (function, mcp, allowed_tools), got %q", agent.Shorten(mode, 40))
	}
	type named struct {
		Type        string `json:"type"`
		Name        string `json:"name"`
		ServerLabel string `json:"server_label"`
	}
	var obj struct {
		named
		Mode  string  `json:"mode"`
		Tools []named `json:"tools"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, badParam("tool_choice", "tool_choice must be a string or an object")
	}
	name := func(field string, n named) (string, error) {
		switch n.Type {
		case "function":
			if !hasSpec(client, n.Name) {
				return "", badParam(field+".name", "%s names function %q, which is not in tools", field, agent.Shorten(n.Name, 80))
			}
			return n.Name, nil
		case "mcp":
			if n.ServerLabel == "" || n.Name == "" {
				return "", badParam(field, "an mcp %s needs server_label and name (agentik's tool <server_label>__<name>)", field)
			}
			return n.ServerLabel + "__" + n.Name, nil
		}
		return "", badParam(field+".type", "%s.type must be \"function\" or \"mcp\", got %q", field, agent.Shorten(n.Type, 40))
	}
	if obj.Type == "allowed_tools" {
		tc := &agent.ToolChoice{Mode: obj.Mode}
		if tc.Mode != agent.ToolChoiceAuto && tc.Mode != agent.ToolChoiceRequired {
			return nil, badParam("tool_choice.mode", "tool_choice.mode must be \"auto\" or \"required\", got %q", agent.Shorten(obj.Mode, 40))
		}
		if len(obj.Tools) == 0 {
			return nil, badParam("tool_choice.tools", "tool_choice.tools must name at least one tool")
		}
		for i, t := range obj.Tools {
			n, err := name(fmt.Sprintf("tool_choice.tools[%d]", i), t)
			if err != nil {
				return nil, err
			}
			tc.Allowed = append(tc.Allowed, n)
		}
		return tc, nil
	}
	n, err := name("tool_choice", obj.named)
	if err != nil {
		return nil, err
	}
	return &agent.ToolChoice{Mode: agent.ToolChoiceFunction, Name: n}, nil
}

// inputItem is one parsed input item.
type inputItem struct {
	field    string // input[i], for errors
	kind     string // message, function_call, function_call_output, reasoning, mcp_approval_response, mcp_call
	role     string
	content  []agent.Content
	callID   string
	name     string
	args     string
	output   string
	isError  bool
	approval agent.ApprovalInput
}

// parseInput reads input: a string (one user message) or a list of items.
func parseInput(raw json.RawMessage) ([]inputItem, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badParam("input", "input is required: a string or a list of input items")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if strings.TrimSpace(s) == "" {
			return nil, badParam("input", "input is empty; send the user's message")
		}
		return []inputItem{{field: "input", kind: itemMessage, role: "user", content: []agent.Content{agent.Text(s)}}}, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badParam("input", "input must be a string or a list of input items")
	}
	if len(list) == 0 {
		return nil, badParam("input", "input is empty; send at least one item (the user's message)")
	}
	out := make([]inputItem, 0, len(list))
	for i, r := range list {
		it, skip, err := parseItem(fmt.Sprintf("input[%d]", i), r)
		if err != nil {
			return nil, err
		}
		if !skip {
			out = append(out, it)
		}
	}
	return out, nil
}

func parseItem(field string, raw json.RawMessage) (it inputItem, skip bool, err error) {
	var v struct {
		Type              string          `json:"type"`
		Role              string          `json:"role"`
		Content           json.RawMessage `json:"content"`
		CallID            string          `json:"call_id"`
		Name              string          `json:"name"`
		Arguments         string          `json:"arguments"`
		Output            json.RawMessage `json:"output"`
		Error             json.RawMessage `json:"error"`
		ServerLabel       string          `json:"server_label"`
		ApprovalRequestID string          `json:"approval_request_id"`
		Approve           *bool           `json:"approve"`
		Reason            string          `json:"reason"`
		Summary           []Part          `json:"summary"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return it, false, badParam(field, "%s must be an input item object", field)
	}
	it.field = field
	if v.Type == "" && v.Role != "" {
		v.Type = itemMessage
	}
	switch v.Type {
	case itemMessage:
		it.kind = itemMessage
		switch v.Role {
		case "user", "assistant", "system", "developer":
		default:
			return it, false, badParam(field+".role", "%s.role must be user, assistant, system or developer, got %q", field, agent.Shorten(v.Role, 40))
		}
		it.role = v.Role
		it.content, err = itemContent(field+".content", v.Content, v.Role == "user")
		return it, false, err
	case itemFunctionCall:
		if v.CallID == "" || v.Name == "" {
			return it, false, badParam(field, "%s (a function_call) needs call_id and name", field)
		}
		it.kind, it.callID, it.name, it.args = itemFunctionCall, v.CallID, v.Name, v.Arguments
		return it, false, nil
	case itemFunctionOutput:
		if v.CallID == "" {
			return it, false, badParam(field+".call_id", "%s.call_id is required: the call_id of the function_call this answers", field)
		}
		out, err := outputText(field+".output", v.Output)
		if err != nil {
			return it, false, err
		}
		it.kind, it.callID, it.output = itemFunctionOutput, v.CallID, out
		return it, false, nil
	case itemReasoning:
		it.kind = itemReasoning
		var b strings.Builder
		for _, p := range v.Summary {
			b.WriteString(p.Text)
		}
		it.output = b.String()
		return it, false, nil
	case itemMCPApprovalResp:
		callID, ok := strings.CutPrefix(v.ApprovalRequestID, prefixApproval)
		if !ok || callID == "" {
			return it, false, &paramError{param: field + ".approval_request_id", err: agent.Errorf(agent.CodeNotFound, "%s.approval_request_id %q names no approval request of agentik (their ids start with %s)", field, agent.Shorten(v.ApprovalRequestID, 80), prefixApproval)}
		}
		if v.Approve == nil {
			return it, false, badParam(field+".approve", "%s.approve is required (true or false)", field)
		}
		d := agent.DecisionDeny
		if *v.Approve {
			d = agent.DecisionApprove
		}
		it.kind, it.callID = itemMCPApprovalResp, callID
		it.approval = agent.ApprovalInput{CallID: callID, Decision: d, Reason: v.Reason}
		return it, false, nil
	case itemMCPCall:
		out, _ := outputText(field+".output", v.Output)
		it.kind, it.callID, it.name, it.args, it.output = itemMCPCall, strings.TrimPrefix(fieldID(raw), prefixMCPCall), v.ServerLabel+"__"+v.Name, v.Arguments, out
		if len(v.Error) > 0 && string(v.Error) != "null" {
			it.isError = true
			if it.output == "" {
				it.output = string(v.Error)
			}
		}
		return it, false, nil
	case itemMCPApprovalReq, "mcp_list_tools":
		return it, true, nil // what the server said before; the answer follows
	}
	return it, false, badParam(field+".type", "%s.type %q is not supported; agentik reads message, function_call, function_call_output, reasoning, mcp_call and mcp_approval_response items", field, agent.Shorten(v.Type, 40))
}

func fieldID(raw json.RawMessage) string {
	var v struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &v)
	return v.ID
}

// itemContent reads a message's content: a string, or parts (text; images
// as data: URLs in user messages).
func itemContent(field string, raw json.RawMessage, images bool) ([]agent.Content, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return []agent.Content{agent.Text(s)}, nil
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Refusal  string `json:"refusal"`
		ImageURL string `json:"image_url"`
		FileID   string `json:"file_id"`
		FileData string `json:"file_data"`
		FileURL  string `json:"file_url"`
		Filename string `json:"filename"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, badParam(field, "%s must be a string or a list of content parts", field)
	}
	var out []agent.Content
	for j, p := range parts {
		pf := fmt.Sprintf("%s[%d]", field, j)
		switch {
		case p.Type == "input_text" || p.Type == "output_text" || p.Type == "text":
			out = append(out, agent.Text(p.Text))
		case p.Type == "refusal":
			out = append(out, agent.Text(p.Refusal))
		case p.Type == "input_image" && images:
			img, err := dataURL(pf+".image_url", p.ImageURL)
			if err != nil {
				return nil, err
			}
			out = append(out, img)
		case p.Type == "input_file" && images:
			f, err := filePart(pf, p.FileID, p.FileData, p.Filename, p.FileURL)
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		default:
			return nil, badParam(pf+".type", "%s.type %q is not supported here; use input_text parts (and input_image and input_file parts in user messages)", pf, agent.Shorten(p.Type, 40))
		}
	}
	return out, nil
}

// outputText is a function_call_output's output: a string, or text parts.
func outputText(field string, raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badParam(field, "%s must be a string or a list of input_text parts", field)
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// split divides the items into history and the new input: a trailing user
// message, trailing function_call_output items, or trailing
// mcp_approval_response items. A continued conversation (continued) takes
// only new input.
func (c *responseCall) split(items []inputItem, continued bool) error {
	n := len(items)
	if n == 0 {
		return badParam("input", "input is empty; send at least one item (the user's message)")
	}
	last := items[n-1]
	first := n - 1
	switch {
	case last.kind == itemMessage && last.role == "user":
		if len(last.content) == 0 {
			return badParam(last.field+".content", "%s.content is empty; send the user's message", last.field)
		}
		if err := agent.CheckContent(last.content); err != nil {
			var e *agent.Error
			if errors.As(err, &e) {
				return &paramError{param: last.field + ".content", err: e}
			}
			return err
		}
		c.input.Content = last.content
	case last.kind == itemFunctionOutput:
		for first > 0 && items[first-1].kind == itemFunctionOutput {
			first--
		}
		for _, it := range items[first:] {
			if _, dup := c.outputs[it.callID]; dup {
				return badParam(it.field+".call_id", "%s.call_id %q answers a call twice", it.field, agent.Shorten(it.callID, 80))
			}
			c.outputs[it.callID] = it.field
			c.input.Results = append(c.input.Results, agent.ToolResult{CallID: it.callID, Result: it.output})
		}
	case last.kind == itemMCPApprovalResp:
		for first > 0 && items[first-1].kind == itemMCPApprovalResp {
			first--
		}
		if !continued {
			return badParam("previous_response_id", "an mcp_approval_response answers a stored response: give its previous_response_id")
		}
		for _, it := range items[first:] {
			c.outputs[it.callID] = it.field
			c.approvals = append(c.approvals, it.approval)
		}
	default:
		return badParam(last.field, "the last input item must be a user message, function_call_output or mcp_approval_response items (the new input), got a %s %s", last.role, last.kind)
	}
	if continued {
		if first > 0 {
			return badParam(items[0].field, "with previous_response_id or conversation, input holds only the new input (a user message, function_call_output or mcp_approval_response items); the history is the stored one")
		}
		return nil
	}
	hist, err := c.historyOf(items[:first])
	if err != nil {
		return err
	}
	c.history = hist
	for _, r := range c.input.Results {
		if !c.calls[r.CallID] {
			f := c.outputs[r.CallID]
			return &paramError{param: f + ".call_id", err: agent.Errorf(agent.CodeBadRequest, "%s.call_id %q answers no function_call of the input; send the function_call item before it, or previous_response_id", f, agent.Shorten(r.CallID, 80))}
		}
	}
	return nil
}

// historyOf turns history items into the model's messages.
func (c *responseCall) historyOf(items []inputItem) ([]agent.ModelMessage, error) {
	var out []agent.ModelMessage
	reasoning := ""
	// assistant is the index in out of the assistant message that
	// function calls join, -1 when the next one starts a new message.
	assistant := -1
	for _, it := range items {
		switch it.kind {
		case itemMessage:
			switch it.role {
			case "system", "developer":
				out = append(out, agent.ModelMessage{Role: agent.RoleSystem, Content: it.content})
				assistant = -1
			case "user":
				if err := agent.CheckContent(it.content); err != nil {
					var e *agent.Error
					if errors.As(err, &e) {
						return nil, &paramError{param: it.field + ".content", err: e}
					}
					return nil, err
				}
				out = append(out, agent.ModelMessage{Role: agent.RoleUser, Content: it.content})
				assistant = -1
			case "assistant":
				out = append(out, agent.ModelMessage{Role: agent.RoleAssistant, Content: it.content, Reasoning: reasoning})
				reasoning = ""
				assistant = len(out) - 1
			}
		case itemReasoning:
			reasoning += it.output
		case itemFunctionCall, itemMCPCall:
			if assistant < 0 {
				out = append(out, agent.ModelMessage{Role: agent.RoleAssistant, Reasoning: reasoning})
				reasoning = ""
				assistant = len(out) - 1
			}
			out[assistant].ToolCalls = append(out[assistant].ToolCalls, agent.ToolCall{ID: it.callID, Name: it.name, Arguments: it.args})
			if it.kind == itemFunctionCall {
				c.calls[it.callID] = true
			} else { // a server-side call: its result is in the item
				result := it.output
				if it.isError {
					result = "error: " + result
				}
				out = append(out, agent.ModelMessage{Role: agent.RoleTool, ToolCallID: it.callID, Name: it.name, Content: []agent.Content{agent.Text(result)}})
			}
		case itemFunctionOutput:
			if !c.calls[it.callID] {
				return nil, &paramError{param: it.field + ".call_id", err: agent.Errorf(agent.CodeBadRequest, "%s.call_id %q answers no function_call before it", it.field, agent.Shorten(it.callID, 80))}
			}
			out = append(out, agent.ModelMessage{Role: agent.RoleTool, ToolCallID: it.callID, Content: []agent.Content{agent.Text(it.output)}})
		case itemMCPApprovalResp:
			return nil, badParam(it.field, "%s: an mcp_approval_response is the last input of a request that continues the response asking for it", it.field)
		}
		if it.kind == itemFunctionOutput || it.kind == itemMCPCall {
			assistant = -1
		}
	}
	return out, nil
}
