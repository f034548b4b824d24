package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentik/agentik/internal/agent"
)

// Request is a chat request the server received, decoded for assertions.
type Request struct {
	Path         string
	Header       http.Header
	Model        string
	Stream       bool
	IncludeUsage bool // stream_options.include_usage
	MaxTokens    int  // max_tokens (or max_completion_tokens); 0 unset
	Messages     []Message
	Tools        []Tool
	// Sampling parameters; nil when the request left them out.
	Temperature *float64
	TopP        *float64
	// ContinueFinalMessage and AddGenerationPrompt are vLLM's options of
	// a request that continues its final assistant message (nil: left out).
	ContinueFinalMessage bool
	AddGenerationPrompt  *bool
	Body                 []byte // the raw JSON body
}

// Message is one message of a Request.
type Message struct {
	Role string
	// Content is the string content, or the text parts joined with "\n"
	// when the content was an array of parts.
	Content string
	// Parts is the content when it was an array: text and image_url parts.
	Parts            []Part
	ReasoningContent string // reasoning_content, or reasoning
	ToolCalls        []agent.ToolCall
	ToolCallID       string
	Name             string
}

// Part is one part of an array content.
type Part struct {
	Type     string // "text" or "image_url"
	Text     string
	ImageURL string // e.g. data:image/png;base64,…
}

// Tool is a function tool a Request offered to the model.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

type wireRequest struct {
	Model         string   `json:"model"`
	Stream        bool     `json:"stream"`
	MaxTokens     int      `json:"max_tokens"`
	MaxCompletion int      `json:"max_completion_tokens"`
	Temperature   *float64 `json:"temperature"`
	TopP          *float64 `json:"top_p"`
	Continue      bool     `json:"continue_final_message"`
	AddGeneration *bool    `json:"add_generation_prompt"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []struct {
		Role             string          `json:"role"`
		Content          json.RawMessage `json:"content"`
		ReasoningContent string          `json:"reasoning_content"`
		Reasoning        string          `json:"reasoning"`
		ToolCalls        []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
		ToolCallID string `json:"tool_call_id"`
		Name       string `json:"name"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

func decodeRequest(body []byte) (Request, error) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return Request{}, fmt.Errorf("decode request: %w", err)
	}
	req := Request{Model: w.Model, Stream: w.Stream, Body: body, MaxTokens: max(w.MaxTokens, w.MaxCompletion), Temperature: w.Temperature, TopP: w.TopP, ContinueFinalMessage: w.Continue, AddGenerationPrompt: w.AddGeneration}
	req.IncludeUsage = w.StreamOptions != nil && w.StreamOptions.IncludeUsage
	for i, m := range w.Messages {
		msg := Message{Role: m.Role, ReasoningContent: m.ReasoningContent, ToolCallID: m.ToolCallID, Name: m.Name}
		if msg.ReasoningContent == "" {
			msg.ReasoningContent = m.Reasoning
		}
		if err := decodeContent(m.Content, &msg); err != nil {
			return Request{}, fmt.Errorf("decode message %d: %w", i, err)
		}
		for _, c := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, agent.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		req.Messages = append(req.Messages, msg)
	}
	for _, t := range w.Tools {
		req.Tools = append(req.Tools, Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	return req, nil
}

func decodeContent(raw json.RawMessage, msg *Message) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		return json.Unmarshal(raw, &msg.Content)
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL *struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return fmt.Errorf("content is neither a string nor parts: %w", err)
	}
	var texts []string
	for _, p := range parts {
		part := Part{Type: p.Type, Text: p.Text}
		if p.ImageURL != nil {
			part.ImageURL = p.ImageURL.URL
		}
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
		msg.Parts = append(msg.Parts, part)
	}
	msg.Content = strings.Join(texts, "\n")
	return nil
}
