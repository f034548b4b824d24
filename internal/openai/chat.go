package openai

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/internal/relay"
	"github.com/agentik/agentik/internal/sse"
)

// chatRequest is the body of POST /v1/chat/completions, as far as agentik
// reads it.
type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	N              *int            `json:"n"`
	Tools          []chatTool      `json:"tools"`
	ToolChoice     json.RawMessage `json:"tool_choice"`
	Logprobs       *bool           `json:"logprobs"`
	ResponseFormat *chatFormat     `json:"response_format"`
	// Modalities is accepted at its default only.
	Modalities []string `json:"modalities"`
}

// chatFormat is response_format.
type chatFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict"`
	} `json:"json_schema"`
}

// format is response_format in the model's terms (nil: free text).
func (f *chatFormat) format() (*agent.ResponseFormat, error) {
	if f == nil {
		return nil, nil
	}
	switch f.Type {
	case agent.FormatText:
		return nil, nil
	case agent.FormatJSONObject:
		return &agent.ResponseFormat{Type: agent.FormatJSONObject}, nil
	case agent.FormatJSONSchema:
		js := f.JSONSchema
		if js == nil {
			return nil, badParam("response_format.json_schema", "response_format.json_schema is required with type \"json_schema\"")
		}
		if !schemaName.MatchString(js.Name) {
			return nil, badParam("response_format.json_schema.name", "response_format.json_schema.name must be 1 to 64 letters, digits, _ or -, got %q", js.Name)
		}
		out := &agent.ResponseFormat{Type: agent.FormatJSONSchema, Name: js.Name, Description: js.Description, Schema: js.Schema}
		if len(js.Schema) > 0 && string(js.Schema) != "null" {
			var obj map[string]json.RawMessage
			if json.Unmarshal(js.Schema, &obj) != nil {
				return nil, badParam("response_format.json_schema.schema", "response_format.json_schema.schema must be a JSON Schema object")
			}
		} else {
			out.Schema = nil
		}
		out.Strict = js.Strict != nil && *js.Strict
		return out, nil
	}
	return nil, badParam("response_format.type", "response_format.type must be \"text\", \"json_object\" or \"json_schema\", got %q", f.Type)
}

// schemaName is what a json_schema format may be called (OpenAI's rule).
var schemaName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// toolChoice reads tool_choice: "auto", "none", "required", a named
// function {"type":"function","function":{"name"}}, or an allowed set
// {"type":"allowed_tools","allowed_tools":{"mode","tools":[…]}}. nil:
// auto.
func toolChoice(raw json.RawMessage) (*agent.ToolChoice, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		switch mode {
		case agent.ToolChoiceAuto:
			return nil, nil
		case agent.ToolChoiceNone, agent.ToolChoiceRequired:
			return &agent.ToolChoice{Mode: mode}, nil
		}
		return nil, badParam("tool_choice", "tool_choice must be \"auto\", \"none\", \"required\" or an object naming a function, got %q", mode)
	}
	type named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	var obj struct {
		named
		AllowedTools *struct {
			Mode  string  `json:"mode"`
			Tools []named `json:"tools"`
		} `json:"allowed_tools"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, badParam("tool_choice", "tool_choice must be a string or an object, got %s", agent.Shorten(string(raw), 100))
	}
	switch obj.Type {
	case "function":
		if obj.Function.Name == "" {
			return nil, badParam("tool_choice.function.name", "tool_choice.function.name is required")
		}
		return &agent.ToolChoice{Mode: agent.ToolChoiceFunction, Name: obj.Function.Name}, nil
	case "allowed_tools":
		at := obj.AllowedTools
		if at == nil || (at.Mode != agent.ToolChoiceAuto && at.Mode != agent.ToolChoiceRequired) {
			return nil, badParam("tool_choice.allowed_tools.mode", "tool_choice.allowed_tools.mode must be \"auto\" or \"required\"")
		}
		c := &agent.ToolChoice{Mode: at.Mode}
		for i, t := range at.Tools {
			if t.Type != "function" || t.Function.Name == "" {
				return nil, badParam(fmt.Sprintf("tool_choice.allowed_tools.tools[%d]", i), "tool_choice.allowed_tools.tools[%d] must be {\"type\":\"function\",\"function\":{\"name\":…}}", i)
			}
			c.Allowed = append(c.Allowed, t.Function.Name)
		}
		if len(c.Allowed) == 0 {
			return nil, badParam("tool_choice.allowed_tools.tools", "tool_choice.allowed_tools.tools must name at least one tool")
		}
		return c, nil
	}
	return nil, badParam("tool_choice.type", "tool_choice.type must be \"function\" or \"allowed_tools\", got %q", obj.Type)
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  []chatToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	// ReasoningContent (DeepSeek's, vLLM's name) and Reasoning (OpenRouter's,
	// which the Agents SDK reads) carry the same text: answers set both,
	// requests may set either.
	ReasoningContent string `json:"reasoning_content,omitempty"`
	Reasoning        string `json:"reasoning,omitempty"`
}

type chatFunctionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type chatToolCall struct {
	Index    *int             `json:"index,omitempty"` // in chunks only
	ID       string           `json:"id,omitempty"`
	Type     string           `json:"type,omitempty"`
	Function chatFunctionCall `json:"function"`
}

type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}

// chatParams are the request fields agentik reads; chatIgnored those it
// accepts and ignores, because the server's model configuration decides
// them. Any other field is refused, so a client never silently loses what
// it asked for.
var (
	chatParams  = []string{"model", "messages", "stream", "stream_options", "n", "tools", "tool_choice", "logprobs", "parallel_tool_calls", "response_format", "modalities"}
	chatIgnored = []string{"temperature", "top_p", "max_tokens", "max_completion_tokens", "presence_penalty", "frequency_penalty",
		"stop", "seed", "user", "metadata", "store", "logit_bias", "reasoning_effort", "service_tier"}
)

// completion is a parsed request: the history of a stateless request, its
// new input, and how to answer.
type completion struct {
	model        string
	stream       bool
	includeUsage bool
	history      []agent.ModelMessage
	input        agent.StartInput
}

func (h *Handler) parseChat(r *http.Request) (completion, error) {
	var raw map[string]json.RawMessage
	if err := decodeBody(r, &raw); err != nil {
		return completion{}, err
	}
	var names []string
	for k := range raw {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !contains(chatParams, k) && !contains(chatIgnored, k) {
			return completion{}, badParam(k, "unsupported parameter %q; agentik reads %s and ignores %s", k, strings.Join(chatParams, ", "), strings.Join(chatIgnored, ", "))
		}
	}
	body, _ := json.Marshal(raw)
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return completion{}, badParam(te.Field, "%s must be %s, not %s", te.Field, te.Type.String(), te.Value)
		}
		return completion{}, badParam("", "the body must be a JSON object: %v", err)
	}
	if req.Model == "" {
		return completion{}, badParam("model", "model is required; GET /v1/models lists them")
	}
	if !h.known(r.Context(), req.Model) {
		return completion{}, h.unknownModel(req.Model)
	}
	if req.N != nil && *req.N != 1 {
		return completion{}, badParam("n", "n must be 1: agentik makes one choice per request, got %d", *req.N)
	}
	if req.Logprobs != nil && *req.Logprobs {
		return completion{}, badParam("logprobs", "logprobs are not supported")
	}
	for i, m := range req.Modalities {
		if m != "text" {
			return completion{}, badParam(fmt.Sprintf("modalities[%d]", i), "modalities must be [\"text\"], got %q", m)
		}
	}
	if req.StreamOptions != nil && !req.Stream {
		return completion{}, badParam("stream_options", "stream_options is only allowed with stream: true")
	}
	c := completion{model: req.Model, stream: req.Stream, includeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage}
	var err error
	if c.input.ResponseFormat, err = req.ResponseFormat.format(); err != nil {
		return completion{}, err
	}
	if c.input.ToolChoice, err = toolChoice(req.ToolChoice); err != nil {
		return completion{}, err
	}
	for i, t := range req.Tools {
		if t.Type != "function" {
			return completion{}, badParam(fmt.Sprintf("tools[%d].type", i), "tools[%d].type must be \"function\", got %q", i, t.Type)
		}
		c.input.ClientTools = append(c.input.ClientTools, agent.ToolSpec{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	if err := agent.CheckClientTools(c.input.ClientTools); err != nil {
		return completion{}, &paramError{param: "tools", err: err.(*agent.Error)}
	}
	if len(req.Messages) == 0 {
		return completion{}, badParam("messages", "messages must hold at least one message, the last from the user or a tool")
	}
	if len(req.Messages) > agent.MaxRequestMessages { // before they are converted: the count bounds the memory
		return completion{}, &paramError{param: "messages", err: agent.Errorf(agent.CodeTooLarge, "messages holds %d messages; at most %d are allowed", len(req.Messages), agent.MaxRequestMessages)}
	}
	msgs := make([]agent.ModelMessage, len(req.Messages))
	for i, m := range req.Messages {
		mm, err := modelMessage(i, m)
		if err != nil {
			return completion{}, err
		}
		msgs[i] = mm
	}
	last := len(msgs) - 1
	switch msgs[last].Role {
	case agent.RoleUser:
		c.history, c.input.Content = msgs[:last], msgs[last].Content
	case agent.RoleTool:
		first := last
		for first > 0 && msgs[first-1].Role == agent.RoleTool {
			first--
		}
		c.history = msgs[:first]
		for _, m := range msgs[first:] {
			c.input.Results = append(c.input.Results, agent.ToolResult{CallID: m.ToolCallID, Name: m.Name, Result: textOf(m.Content)})
		}
	default:
		return completion{}, badParam(fmt.Sprintf("messages[%d].role", last), "the last message must be from the user or a tool (the new input), got role %q", req.Messages[last].Role)
	}
	if len(c.input.Content) > 0 {
		if err := agent.CheckContent(c.input.Content); err != nil {
			var e *agent.Error
			if errors.As(err, &e) {
				return completion{}, &paramError{param: fmt.Sprintf("messages[%d].content", last), err: e}
			}
			return completion{}, err
		}
	}
	return c, nil
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func textOf(cs []agent.Content) string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(c.Body)
	}
	return b.String()
}

// modelMessage is request message i in the model's terms.
func modelMessage(i int, m chatMessage) (agent.ModelMessage, error) {
	field := fmt.Sprintf("messages[%d]", i)
	content, err := chatContent(field+".content", m.Content, m.Role == "user")
	if err != nil {
		return agent.ModelMessage{}, err
	}
	switch m.Role {
	case "system", "developer":
		return agent.ModelMessage{Role: agent.RoleSystem, Content: content}, nil
	case "user":
		return agent.ModelMessage{Role: agent.RoleUser, Content: content}, nil
	case "assistant":
		mm := agent.ModelMessage{Role: agent.RoleAssistant, Content: content, Reasoning: cmp.Or(m.ReasoningContent, m.Reasoning)}
		for j, tc := range m.ToolCalls {
			if tc.ID == "" || tc.Function.Name == "" {
				return agent.ModelMessage{}, badParam(fmt.Sprintf("%s.tool_calls[%d]", field, j), "%s.tool_calls[%d] needs an id and a function.name", field, j)
			}
			mm.ToolCalls = append(mm.ToolCalls, agent.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		return mm, nil
	case "tool":
		if m.ToolCallID == "" {
			return agent.ModelMessage{}, badParam(field+".tool_call_id", "%s.tool_call_id is required for a tool message", field)
		}
		return agent.ModelMessage{Role: agent.RoleTool, Content: content, ToolCallID: m.ToolCallID, Name: m.Name}, nil
	}
	return agent.ModelMessage{}, badParam(field+".role", "%s.role must be system, developer, user, assistant or tool, got %q", field, m.Role)
}

// chatContent reads a message's content: a string, null, or parts (text,
// and for the user image_url parts holding data: URLs).
func chatContent(field string, raw json.RawMessage, images bool) ([]agent.Content, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if s == "" {
			return nil, nil
		}
		return []agent.Content{agent.Text(s)}, nil
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL *struct {
			URL string `json:"url"`
		} `json:"image_url"`
		File *struct {
			FileID   string `json:"file_id"`
			FileData string `json:"file_data"`
			Filename string `json:"filename"`
		} `json:"file"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, badParam(field, "%s must be a string or an array of content parts", field)
	}
	var out []agent.Content
	for j, p := range parts {
		pf := fmt.Sprintf("%s[%d]", field, j)
		switch {
		case p.Type == "text":
			out = append(out, agent.Text(p.Text))
		case p.Type == "image_url" && images:
			if p.ImageURL == nil {
				return nil, badParam(pf+".image_url", "%s.image_url.url is required", pf)
			}
			img, err := dataURL(pf+".image_url.url", p.ImageURL.URL)
			if err != nil {
				return nil, err
			}
			out = append(out, img)
		case p.Type == "file" && images:
			if p.File == nil {
				return nil, badParam(pf+".file", "%s.file is required: {\"file_id\"} or {\"file_data\", \"filename\"}", pf)
			}
			f, err := filePart(pf+".file", p.File.FileID, p.File.FileData, p.File.Filename, "")
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		default:
			return nil, badParam(pf+".type", "%s.type %q is not supported here; use text parts (and image_url and file parts in user messages)", pf, p.Type)
		}
	}
	return out, nil
}

// dataURL reads an image given as data:<mime>;base64,<data>. Remote URLs
// are refused: agentik does not fetch what a request points at.
func dataURL(field, u string) (agent.Content, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	mime, data, ok2 := strings.Cut(rest, ";base64,")
	if !ok || !ok2 {
		return agent.Content{}, badParam(field, "%s must be a data: URL (data:image/png;base64,…); agentik does not fetch remote images", field)
	}
	if _, err := base64.StdEncoding.DecodeString(data); err != nil {
		return agent.Content{}, badParam(field, "%s holds invalid base64", field)
	}
	return agent.Content{Type: agent.ContentImage, Mime: mime, Data: data}, nil
}

// filePart reads a file a user message attaches (a chat completion's
// file part, a Responses input_file): a file_id of the caller's, or
// file_data (a data: URL, or bare base64) with its filename. The centre
// stores and checks it (agent filepart.go). A file_url is refused:
// agentik fetches no URL a request names.
func filePart(field, fileID, fileData, filename, fileURL string) (agent.Content, error) {
	switch {
	case fileURL != "":
		return agent.Content{}, badParam(field+".file_url", "%s.file_url is not fetched (agentik fetches no URL a request names); send file_data, or upload the file with POST /v1/files and send its file_id", field)
	case fileID != "" && fileData != "":
		return agent.Content{}, badParam(field, "%s has both file_id and file_data; send one", field)
	case fileID != "":
		return agent.Content{Type: agent.ContentFile, FileID: fileID}, nil
	case fileData == "":
		return agent.Content{}, badParam(field, "%s needs file_id (a file uploaded with POST /v1/files) or file_data (a data: URL) with filename", field)
	case filename == "":
		return agent.Content{}, badParam(field+".filename", "%s.filename is required with file_data, e.g. \"handbook.pdf\"", field)
	}
	mime, data := "", fileData
	if rest, ok := strings.CutPrefix(fileData, "data:"); ok {
		m, d, ok := strings.Cut(rest, ";base64,")
		if !ok {
			return agent.Content{}, badParam(field+".file_data", "%s.file_data must be a base64 data: URL (data:application/pdf;base64,…)", field)
		}
		mime, data = m, d
	}
	if _, err := base64.StdEncoding.DecodeString(data); err != nil {
		return agent.Content{}, badParam(field+".file_data", "%s.file_data holds invalid base64", field)
	}
	return agent.Content{Type: agent.ContentFile, Name: filename, Mime: mime, Data: data}, nil
}

// Retry headers: IdempotencyHeader names a request so that its retry is
// the same turn; the OpenAI SDKs count their retries in RetryCountHeader;
// ShouldRetryHeader tells them (they obey it) not to retry a request that
// stored something.
const (
	IdempotencyHeader = "Idempotency-Key"
	RetryCountHeader  = "X-Stainless-Retry-Count"
	ShouldRetryHeader = "X-Should-Retry"
)

// maxIdempotencyKey bounds an Idempotency-Key (it is the turn's client_id).
const maxIdempotencyKey = 200

// retryWindow is how many of a conversation's latest messages a retry
// without an Idempotency-Key looks through for its first attempt's input.
const retryWindow = 32

func (h *Handler) handleChatCompletions(w http.ResponseWriter, r *http.Request) {
	if !h.runner.ModelConfigured() {
		h.WriteError(w, r, agent.Errorf(agent.CodeUnavailable, "no model is configured on this agentik server"))
		return
	}
	c, err := h.parseChat(r)
	if err != nil {
		h.WriteError(w, r, err)
		return
	}
	if k := r.Header.Get(IdempotencyHeader); k != "" {
		if len(k) > maxIdempotencyKey {
			h.WriteError(w, r, agent.Errorf(agent.CodeBadRequest, "the %s header is %d bytes long; at most %d are allowed", IdempotencyHeader, len(k), maxIdempotencyKey))
			return
		}
		c.input.ClientID = k
	}
	ctx := r.Context()
	id := r.Header.Get(protocol.ConversationHeader)
	var conv agent.Conversation
	in := c.input
	if id == "" {
		// A stateless request: a temp conversation seeded with its history,
		// made with its turn (or not at all when that is refused).
		id = agent.NewID()
		conv = agent.Conversation{ID: id, Temp: true}
		in.ConversationID, in.New = id, &agent.NewConversation{Temp: true, History: c.history, Settings: h.modelSetting(c.model)}
	} else if conv, err = h.convs.Get(ctx, id); err != nil {
		h.WriteError(w, r, err)
		return
	} else {
		in.ConversationID = id
	}
	var sub *relay.Sub
	if conv.Temp { // never stored: listen before the turn starts
		if sub, err = relay.Conversation(ctx, h.broker, id, -1); err != nil {
			h.WriteError(w, r, err)
			return
		}
	}
	var res agent.SendResult
	if seq, ok := h.retryOf(ctx, r, conv, in); ok {
		res = agent.SendResult{Seq: seq, Duplicate: true} // the first attempt's turn
	} else if failed, ok := h.failedRetryOf(ctx, conv, "", in); ok {
		res, err = h.runner.Regenerate(ctx, id, failed) // the failed turn again, not a second input
	} else {
		res, err = h.runner.Start(ctx, in)
	}
	if err == nil && res.Created {
		// Deleting interrupts the turn first: a client that left stops it.
		defer func() { _ = h.runner.Delete(context.WithoutCancel(ctx), id) }()
	}
	if err == nil && sub == nil {
		// Replay from the turn's first event: nothing of it is missed.
		sub, err = relay.Conversation(ctx, h.broker, id, res.Seq-1)
	}
	if err != nil {
		if sub != nil {
			sub.Close()
		}
		h.WriteError(w, r, err)
		return
	}
	defer sub.Close()
	if !conv.Temp {
		// The input is stored: a retry would store it again (unless it
		// carries the same Idempotency-Key), so an error from here on must
		// not invite one.
		w.Header().Set(ShouldRetryHeader, "false")
	}
	cr := &chatRelay{
		id: "chatcmpl-" + agent.NewID(), model: c.model, created: h.now().Unix(),
		clientTools: c.input.ClientTools,
	}
	if c.stream {
		h.streamChat(w, r, sub, cr, c.includeUsage)
		return
	}
	if err := (relay.Follow{Closing: h.closing}).Run(ctx, sub, cr.project(nil, nil)); err != nil {
		if !errors.Is(err, relay.ErrLeft) { // the server is shutting down, or the subscription failed
			h.log.Warn("completion_cut", "err", err)
			h.WriteError(w, r, agent.Errorf(agent.CodeUnavailable, "the server stopped following the answer (shutting down or overloaded); send the request again"))
		}
		return // else the client left
	}
	if cr.err != nil {
		h.WriteError(w, r, cr.err)
		return
	}
	writeJSON(w, http.StatusOK, cr.completion())
}

// retryOf finds the turn a retry repeats when it carries no
// Idempotency-Key: for a request the SDK marks as a retry (a retry count
// of 1 or more) on a stored conversation whose latest input is this
// request's input, it is the seq of that input, whose turn the first
// attempt started.
func (h *Handler) retryOf(ctx context.Context, r *http.Request, conv agent.Conversation, in agent.StartInput) (int64, bool) {
	if conv.Temp || in.ClientID != "" {
		return 0, false
	}
	if n, err := strconv.Atoi(r.Header.Get(RetryCountHeader)); err != nil || n < 1 {
		return 0, false
	}
	n, _, err := h.convs.PathInfo(ctx, conv)
	if err != nil {
		return 0, false
	}
	msgs, err := h.convs.Messages(ctx, agent.MessageQuery{ConversationID: conv.ID, Offset: max(0, n-retryWindow), Limit: retryWindow})
	if err != nil {
		return 0, false
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		switch m.Type {
		case agent.MessageUser:
			if len(in.Content) == 0 || !h.runner.SameContent(ctx, m.Content, in.Content) {
				return 0, false
			}
			return m.Seq, true
		case agent.MessageToolResult:
			if len(in.Results) > 0 && m.CallID == in.Results[0].CallID {
				return m.Seq, true
			}
		}
	}
	return 0, false
}

// RetryAfter is how long after a failed turn's user message the same
// message, sent again without a key, is taken for a retry of it.
const RetryAfter = 5 * time.Minute

// failedRetryOf finds the failed turn a retry repeats when the client
// does not say it retries (LangChain retries through its own caller, the
// AI SDK through its own, neither with a key or a retry count): a user
// message equal to the latest one of a stored conversation whose turn
// failed, within RetryAfter of it, answers that message again in place
// of the failure (Regenerate of the error: one user message, the new
// answer a sibling of the failed one) instead of storing it twice. It
// returns the failed turn's error message id.
//
// leaf, when set, is the message the input continues (a Responses
// previous_response_id): the failed turn's user message must follow it.
func (h *Handler) failedRetryOf(ctx context.Context, conv agent.Conversation, leaf string, in agent.StartInput) (string, bool) {
	if conv.Temp || in.ClientID != "" || len(in.Content) == 0 || len(in.Results) > 0 {
		return "", false
	}
	n, _, err := h.convs.PathInfo(ctx, conv)
	if err != nil || n == 0 {
		return "", false
	}
	msgs, err := h.convs.Messages(ctx, agent.MessageQuery{ConversationID: conv.ID, Offset: max(0, n-retryWindow), Limit: retryWindow})
	if err != nil || len(msgs) == 0 || msgs[len(msgs)-1].Type != agent.MessageError {
		return "", false
	}
	failed := msgs[len(msgs)-1].ID
	for i := len(msgs) - 2; i >= 0; i-- {
		if m := msgs[i]; m.Type == agent.MessageUser {
			ok := h.runner.SameContent(ctx, m.Content, in.Content) && h.now().Sub(m.Date) <= RetryAfter
			if leaf != "" {
				ok = ok && i > 0 && msgs[i-1].ID == leaf
			}
			return failed, ok
		}
	}
	return "", false
}

// chatRelay turns a turn's events into OpenAI's chat completion.
type chatRelay struct {
	id, model   string
	created     int64
	clientTools []agent.ToolSpec

	reasoning bool // the text now is reasoning
	// toolsRan: server-side tools ran since the last answer text; the next
	// answer's text is a new paragraph of the one content.
	toolsRan bool
	text     strings.Builder
	thought  strings.Builder
	calls    []chatToolCall // to client-side tools
	usage    agent.Usage
	err      *agent.Error
	// answered: the model began to answer (text, reasoning or a tool
	// call); until then a failure can still be an HTTP status.
	answered bool
}

// chatDelta is the delta of one chunk.
type chatDelta struct {
	Role             string         `json:"role,omitempty"`
	Content          *string        `json:"content,omitempty"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	Reasoning        string         `json:"reasoning,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
}

// on takes one event and says what the client gets of it; ok is false
// when nothing.
func (c *chatRelay) on(ev *agent.Event) (d chatDelta, ok bool) {
	switch ev.Type {
	case agent.EventStartReasoning, agent.EventStartResponse, agent.EventAppendText, agent.EventAppendImage, agent.EventToolCall:
		c.answered = true
	}
	switch ev.Type {
	case agent.EventStartReasoning:
		c.reasoning = true
	case agent.EventStartResponse:
		c.reasoning = false
	case agent.EventAppendText:
		if c.reasoning {
			c.thought.WriteString(ev.Text)
			return chatDelta{ReasoningContent: ev.Text, Reasoning: ev.Text}, true
		}
		t := ev.Text
		if c.toolsRan && c.text.Len() > 0 {
			t = "\n\n" + t
		}
		c.toolsRan = false
		c.text.WriteString(t)
		return chatDelta{Content: &t}, true
	case agent.EventToolResult:
		c.toolsRan = true
	case agent.EventToolCall:
		if !hasSpec(c.clientTools, ev.Name) {
			return chatDelta{}, false // a server-side tool: agentik runs it
		}
		idx := len(c.calls)
		call := chatToolCall{ID: ev.CallID, Type: "function", Function: chatFunctionCall{Name: ev.Name, Arguments: ev.Arguments}}
		c.calls = append(c.calls, call)
		call.Index = &idx
		return chatDelta{ToolCalls: []chatToolCall{call}}, true
	case agent.EventError:
		c.err = &agent.Error{Code: ev.Code, Message: ev.Error}
		if c.err.Code == "" {
			c.err.Code = agent.CodeModelError
		}
	case agent.EventEnd:
		if ev.Usage != nil {
			c.usage = *ev.Usage
		}
	}
	return chatDelta{}, false
}

func hasSpec(specs []agent.ToolSpec, name string) bool {
	for _, s := range specs {
		if s.Name == name {
			return true
		}
	}
	return false
}

func (c *chatRelay) finish() string {
	if len(c.calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

type chatChoice struct {
	Index        int          `json:"index"`
	Message      *chatMessage `json:"message,omitempty"`
	Delta        *chatDelta   `json:"delta,omitempty"`
	FinishReason *string      `json:"finish_reason"`
}

type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *agent.Usage `json:"usage,omitempty"`
}

// completion is the whole answer, for a request without stream.
func (c *chatRelay) completion() chatResponse {
	m := &chatMessage{Role: "assistant", ReasoningContent: c.thought.String(), Reasoning: c.thought.String(), Content: json.RawMessage("null")}
	if c.text.Len() > 0 || len(c.calls) == 0 {
		m.Content, _ = json.Marshal(c.text.String())
	}
	m.ToolCalls = c.calls
	f := c.finish()
	u := c.usage
	return chatResponse{ID: c.id, Object: "chat.completion", Created: c.created, Model: c.model,
		Choices: []chatChoice{{Index: 0, Message: m, FinishReason: &f}}, Usage: &u}
}

// chunk is one streamed chunk.
func (c *chatRelay) chunk(d *chatDelta, finish string, usage *agent.Usage) chatResponse {
	ch := chatResponse{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model, Choices: []chatChoice{}, Usage: usage}
	if d != nil {
		choice := chatChoice{Index: 0, Delta: d}
		if finish != "" {
			choice.FinishReason = &finish
		}
		ch.Choices = append(ch.Choices, choice)
	}
	return ch
}

// project is the turn's events as chat chunks (none for a completion
// that is not streamed: chunk is nil), ending at the turn's end; begin
// (when not nil) is called once the model began to answer.
func (c *chatRelay) project(begin func(), chunk func(chatDelta) relay.Frame) relay.Projection {
	return relay.Events(func(ev *agent.Event) ([]relay.Frame, bool) {
		was := c.answered
		d, ok := c.on(ev)
		if begin != nil && !was && c.answered {
			begin()
		}
		var fs []relay.Frame
		if ok && chunk != nil {
			fs = append(fs, chunk(d))
		}
		return fs, ev.Type == agent.EventEnd
	})
}

// errShuttingDown is what a stream asked for during shutdown gets.
var errShuttingDown = agent.Errorf(agent.CodeUnavailable, "the server is shutting down; reconnect in a moment")

// streamChat answers with server-sent chunks, as OpenAI streams. The
// stream starts once the model began to answer, or at the first heartbeat
// (so a slow first token still gets keepalives past proxies): a turn that
// fails before (the model refused, or is down) answers with the error's
// HTTP status, as OpenAI does, so clients classify it; after, the error
// is the stream's last chunk.
func (h *Handler) streamChat(w http.ResponseWriter, r *http.Request, sub *relay.Sub, cr *chatRelay, includeUsage bool) {
	if !h.streams.Hold() {
		h.WriteError(w, r, errShuttingDown)
		return
	}
	defer h.streams.Release()
	frame := func(v any) relay.Frame {
		b, _ := json.Marshal(v) // chat chunks always marshal
		return relay.Data(b)
	}
	out := &chatStream{w: w, first: frame(cr.chunk(&chatDelta{Role: "assistant"}, "", nil))}
	err := relay.Follow{Sink: out, Heartbeat: h.cfg.Heartbeat, Closing: h.closing}.Run(r.Context(), sub,
		cr.project(out.start, func(d chatDelta) relay.Frame { return frame(cr.chunk(&d, "", nil)) }))
	if err != nil {
		if out.sw == nil && !errors.Is(err, relay.ErrLeft) {
			h.log.Warn("completion_cut", "err", err)
			h.WriteError(w, r, agent.Errorf(agent.CodeUnavailable, "the server stopped following the answer (shutting down or overloaded); send the request again"))
		}
		return
	}
	if out.sw == nil {
		if cr.err != nil {
			h.WriteError(w, r, cr.err)
			return
		}
		out.start() // an empty answer
	}
	if cr.err != nil {
		_, body := h.errorBody(r.Method+" "+r.URL.Path, cr.err)
		out.Frame(frame(body))
	} else {
		out.Frame(frame(cr.chunk(&chatDelta{}, cr.finish(), nil)))
		if includeUsage {
			u := cr.usage
			out.Frame(frame(cr.chunk(nil, "", &u)))
		}
		out.Frame(relay.Data([]byte("[DONE]")))
	}
	_ = out.Flush()
}

// chatStream is a chat completion's stream as a relay.Sink that starts
// (its headers, then the assistant's role chunk) at the first frame or
// heartbeat, or at start: until then an error can still be the answer's
// HTTP status.
type chatStream struct {
	w     http.ResponseWriter
	first relay.Frame
	sw    *sse.Writer // nil until started
	sink  relay.Sink
}

func (c *chatStream) start() {
	if c.sw == nil {
		c.sw = sse.Start(c.w)
		c.sink = relay.SSE(c.sw)
		c.sink.Frame(c.first)
	}
}
func (c *chatStream) Frame(f relay.Frame) { c.start(); c.sink.Frame(f) }
func (c *chatStream) Comment(text string) { c.start(); c.sink.Comment(text) }
func (c *chatStream) Buffered() int {
	if c.sw == nil {
		return 0
	}
	return c.sink.Buffered()
}
func (c *chatStream) Flush() error {
	if c.sw == nil {
		return nil
	}
	return c.sink.Flush()
}
