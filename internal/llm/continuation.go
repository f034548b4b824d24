package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentik/agentik/internal/agent"
)

// continueInstruction follows a cut-off answer in ContinueInstruction
// mode. The model's reply is appended to the kept text as it is.
const continueInstruction = "Your previous answer was cut off by a server restart. Continue it exactly where it stopped: write only what comes next, without repeating anything already written and without any comment about the interruption."

// continued adds to out what a continuation request needs in m's mode: in
// ContinueInstruction mode the user message asking to go on (the kept
// answer is then the assistant message before it). ContinuePrefix's
// fields are continuation's.
func (m *Model) continued(req agent.ChatRequest, out *openai.ChatCompletionRequest) {
	if !req.Continue || m.cont == ContinuePrefix {
		return
	}
	out.Messages = append(out.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: continueInstruction})
}

// continuation is the top-level fields a continuation request adds in
// ContinuePrefix mode (nil otherwise): the final assistant message is
// continued, no new assistant turn is opened.
func (m *Model) continuation(req agent.ChatRequest) map[string]any {
	if !req.Continue || m.cont != ContinuePrefix {
		return nil
	}
	return map[string]any{"continue_final_message": true, "add_generation_prompt": false}
}

// withFields sets top-level fields of r's JSON body.
func withFields(r *http.Request, fields map[string]any) error {
	if r.Body == nil {
		return nil
	}
	raw, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return fmt.Errorf("llm: request body: %w", err)
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(raw, &body); err != nil {
		return fmt.Errorf("llm: request body: %w", err)
	}
	for k, v := range fields {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("llm: request field %s: %w", k, err)
		}
		body[k] = b
	}
	if raw, err = json.Marshal(body); err != nil {
		return fmt.Errorf("llm: request body: %w", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil }
	r.ContentLength = int64(len(raw))
	return nil
}
