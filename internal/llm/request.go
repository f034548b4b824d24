package llm

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentik/agentik/internal/agent"
)

// emptySchema stands in for a tool without parameters: servers reject a
// null schema.
// minTemperature stands in for 0, which go-openai would leave out.
const minTemperature = 1e-6

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// request builds the streamed chat completion request of req.
func (m *Model) request(req agent.ChatRequest) openai.ChatCompletionRequest {
	out := openai.ChatCompletionRequest{
		Model:         m.model,
		Messages:      messages(req.Messages),
		Stream:        true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
		MaxTokens:     req.MaxTokens,
	}
	if req.Model != "" {
		out.Model = req.Model
	}
	m.continued(req, &out)
	if p := req.Params; p != nil {
		if p.Temperature != nil {
			// go-openai omits a zero temperature; the smallest float32
			// above zero is greedy sampling too.
			out.Temperature = max(float32(*p.Temperature), minTemperature)
		}
		if p.MaxTokens != nil {
			out.MaxTokens = *p.MaxTokens
		}
		if p.TopP != nil {
			out.TopP = max(float32(*p.TopP), minTemperature)
		}
		if p.ReasoningEffort != nil {
			out.ReasoningEffort = *p.ReasoningEffort
		}
		if p.ParallelToolCalls != nil && len(req.Tools) > 0 {
			out.ParallelToolCalls = *p.ParallelToolCalls
		}
	}
	if f := req.ResponseFormat; f != nil {
		out.ResponseFormat = responseFormat(f)
	}
	if c := req.ToolChoice; c != nil {
		out.ToolChoice = toolChoice(c)
	}
	for _, t := range req.Tools {
		if c := req.ToolChoice; c != nil && len(c.Allowed) > 0 && !slices.Contains(c.Allowed, t.Name) {
			continue // not offered: the request allows the model other tools only
		}
		params := t.Parameters
		if len(params) == 0 || string(params) == "null" {
			params = emptySchema
		}
		out.Tools = append(out.Tools, openai.Tool{
			Type: openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{
				Name:        t.Name,
				Description: t.Description,
				Parameters:  params,
			},
		})
	}
	return out
}

// responseFormat is f in OpenAI's terms.
func responseFormat(f *agent.ResponseFormat) *openai.ChatCompletionResponseFormat {
	out := &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatType(f.Type)}
	if f.Type == agent.FormatJSONSchema {
		schema := f.Schema
		if len(schema) == 0 {
			schema = emptySchema
		}
		out.JSONSchema = &openai.ChatCompletionResponseFormatJSONSchema{Name: f.Name, Description: f.Description, Schema: schema, Strict: f.Strict}
	}
	return out
}

// toolChoice is c in OpenAI's terms: a mode's name, or a named function.
func toolChoice(c *agent.ToolChoice) any {
	if c.Mode == agent.ToolChoiceFunction {
		return openai.ToolChoice{Type: openai.ToolTypeFunction, Function: openai.ToolFunction{Name: c.Name}}
	}
	return c.Mode
}

// messages converts the working memory into OpenAI messages.
//
// Reasoning goes back as reasoning_content only on assistant messages after
// the last user message, i.e. within the tool loop of the current turn:
// that is where servers need it (DeepSeek and Kimi thinking with tools),
// while reasoning of earlier turns is dropped, as those servers expect, and
// saves context.
//
// Summaries of compacted turns (agent.RoleSummary) join the system
// message: many chat templates accept one system message only, at the
// start.
func messages(in []agent.ModelMessage) []openai.ChatCompletionMessage {
	in = withSummaries(in)
	lastUser := -1
	for i, m := range in {
		if m.Role == agent.RoleUser {
			lastUser = i
		}
	}
	out := make([]openai.ChatCompletionMessage, 0, len(in))
	for i, m := range in {
		o := openai.ChatCompletionMessage{Role: m.Role}
		switch m.Role {
		case agent.RoleUser:
			if hasImage(m.Content) {
				o.MultiContent = parts(m.Content)
			} else {
				o.Content = text(m.Content)
			}
		case agent.RoleAssistant:
			o.Content = text(m.Content)
			if i > lastUser {
				o.ReasoningContent = m.Reasoning
			}
			for _, c := range m.ToolCalls {
				args := c.Arguments
				if strings.TrimSpace(args) == "" {
					args = "{}"
				}
				o.ToolCalls = append(o.ToolCalls, openai.ToolCall{
					ID:       c.ID,
					Type:     openai.ToolTypeFunction,
					Function: openai.FunctionCall{Name: c.Name, Arguments: args},
				})
			}
		case agent.RoleTool:
			o.Content = text(m.Content)
			o.ToolCallID = m.ToolCallID
		default: // system, and roles this version does not know
			o.Content = text(m.Content)
		}
		out = append(out, o)
		if m.Role == agent.RoleTool && (i+1 == len(in) || in[i+1].Role != agent.RoleTool) {
			if imgs := toolImages(in, i); imgs != nil {
				out = append(out, *imgs)
			}
		}
	}
	return out
}

// toolImages is the user message that shows the model the images of the
// run of tool results ending at in[last]: a tool message carries text
// only (OpenAI and the servers that follow it), so images that a tool
// returned follow its results as image parts, each named by its call.
// nil when the run has no images.
func toolImages(in []agent.ModelMessage, last int) *openai.ChatCompletionMessage {
	first := last
	for first > 0 && in[first-1].Role == agent.RoleTool {
		first--
	}
	var ps []openai.ChatMessagePart
	for _, m := range in[first : last+1] {
		var imgs []agent.Content
		for _, c := range m.Content {
			if c.Type == agent.ContentImage {
				imgs = append(imgs, c)
			}
		}
		if len(imgs) == 0 {
			continue
		}
		ps = append(ps, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: fmt.Sprintf("The result of tool call %s (%s) came with %d image(s):", m.ToolCallID, m.Name, len(imgs))})
		ps = append(ps, parts(imgs)...)
	}
	if ps == nil {
		return nil
	}
	return &openai.ChatCompletionMessage{Role: agent.RoleUser, MultiContent: ps}
}

func hasImage(cs []agent.Content) bool {
	for _, c := range cs {
		if c.Type == agent.ContentImage {
			return true
		}
	}
	return false
}

// text joins the text parts of cs (a file's part is its text, as the
// working memory holds it); other parts are dropped.
func text(cs []agent.Content) string {
	var parts []string
	for _, c := range cs {
		if c.Type == agent.ContentText || c.Type == agent.ContentFile { // a file's part holds its text
			parts = append(parts, c.Body)
		}
	}
	return strings.Join(parts, "\n")
}

// parts converts cs into text and image_url parts; images travel as data
// URLs.
func parts(cs []agent.Content) []openai.ChatMessagePart {
	var out []openai.ChatMessagePart
	for _, c := range cs {
		switch c.Type {
		case agent.ContentText, agent.ContentFile: // a file's part holds its text
			out = append(out, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: c.Body})
		case agent.ContentImage:
			out = append(out, openai.ChatMessagePart{
				Type:     openai.ChatMessagePartTypeImageURL,
				ImageURL: &openai.ChatMessageImageURL{URL: "data:" + c.Mime + ";base64," + c.Data},
			})
		}
	}
	return out
}

// withSummaries merges summary entries into the first system message (or
// a system message of their own at the start).
func withSummaries(in []agent.ModelMessage) []agent.ModelMessage {
	var sums []string
	for _, m := range in {
		if m.Role == agent.RoleSummary {
			sums = append(sums, text(m.Content))
		}
	}
	if len(sums) == 0 {
		return in
	}
	note := "Summary of the earlier part of this conversation (its messages were compacted to fit the context window):\n" + strings.Join(sums, "\n\n")
	out := make([]agent.ModelMessage, 0, len(in))
	if len(in) > 0 && in[0].Role == agent.RoleSystem {
		sys := in[0]
		sys.Content = []agent.Content{agent.Text(text(sys.Content) + "\n\n" + note)}
		out = append(out, sys)
		in = in[1:]
	} else {
		out = append(out, agent.ModelMessage{Role: agent.RoleSystem, Content: []agent.Content{agent.Text(note)}})
	}
	for _, m := range in {
		if m.Role != agent.RoleSummary {
			out = append(out, m)
		}
	}
	return out
}
