package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/protocol"
)

// protocols: one stream at full speed through each projection of the log
// (Responses, the AI SDK UI message stream, AG-UI, A2A streaming, MCP
// progress), each against the WebSocket relay of the same agentik in the
// same round. Every projection here is stored (each event written to the
// log, like the WebSocket relay's turn), and the text each client reads
// must be the model's exactly.
func (b *bench) protocols(ctx context.Context) error {
	n := b.sz.RelayTokens
	want := llmtest.Tokens(n)
	// Titles from the first line: the projections make conversations
	// without a title (the WebSocket's and chat's have one), and a title
	// by the model is a second model call after the answer, whose prompt
	// quotes the user's message: the fake answers its [[tokens=N]] again,
	// a second full-length stream that ran on into the next projection's
	// turn (a real model answers eight words). Every run below must be
	// one model call (checked at the end).
	t, err := b.agentik(ctx, "protocols.db", "AGENTIK_TITLES=first_line")
	if err != nil {
		return err
	}
	defer t.Close()
	root := t.URL()
	model, err := b.facadeModel(ctx, root)
	if err != nil {
		return err
	}
	rt := newRouter()
	ws, err := dialWS(ctx, wsURL(root, "/agentik/ws"), rt.on)
	if err != nil {
		return err
	}
	defer ws.Close()
	mcp, err := b.mcpSession(ctx, root)
	if err != nil {
		return err
	}

	var respID, taskID string // of the round's Responses and A2A streams
	projections := []struct {
		name string
		run  func(ctx context.Context, key string) (string, error)
	}{
		{"Responses (/v1/responses, stream)", func(ctx context.Context, key string) (string, error) {
			respID = ""
			return b.sseText(ctx, root+"/v1/responses", nil, map[string]any{"model": model, "input": prompt(n, 0, key), "stream": true}, responsesDeltaID(&respID))
		}},
		{"chat completions (/v1, stored)", func(ctx context.Context, key string) (string, error) {
			conv, err := b.createConversation(ctx, root, key)
			if err != nil {
				return "", err
			}
			return b.sseText(ctx, root+"/v1/chat/completions", http.Header{protocol.ConversationHeader: {conv}}, map[string]any{"model": model, "stream": true,
				"messages": []any{map[string]any{"role": "user", "content": prompt(n, 0, key)}}}, chatDelta)
		}},
		{"AI SDK UI message stream", func(ctx context.Context, key string) (string, error) {
			return b.sseText(ctx, root+"/agentik/ai-sdk/chat", nil, map[string]any{"id": key, "trigger": "submit-message",
				"messages": []any{map[string]any{"id": "m-" + key, "role": "user", "parts": []any{map[string]any{"type": "text", "text": prompt(n, 0, key)}}}}}, typedDelta("text-delta"))
		}},
		{"AG-UI", func(ctx context.Context, key string) (string, error) {
			return b.sseText(ctx, root+"/agentik/ag-ui", nil, map[string]any{"threadId": key, "runId": "r-" + key, "tools": []any{}, "context": []any{}, "state": map[string]any{}, "forwardedProps": map[string]any{},
				"messages": []any{map[string]any{"id": "m-" + key, "role": "user", "content": prompt(n, 0, key)}}}, typedDelta("TEXT_MESSAGE_CONTENT"))
		}},
		{"A2A SendStreamingMessage", func(ctx context.Context, key string) (string, error) {
			return b.sseText(ctx, root+"/a2a/agentik", nil, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
				"params": map[string]any{"message": map[string]any{"messageId": "m-" + key, "role": "ROLE_USER", "parts": []any{map[string]any{"text": prompt(n, 0, key)}}}}}, a2aDeltaID(&taskID))
		}},
		{"MCP tools/call progress", func(ctx context.Context, key string) (string, error) {
			return b.sseText(ctx, root+"/mcp", mcp, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
				"params": map[string]any{"name": "ask_agentik", "arguments": map[string]any{"message": prompt(n, 0, key)}, "_meta": map[string]any{"progressToken": key}}}, mcpDelta)
		}},
	}
	// In a run with the facade scenario (next), each round also streams
	// the answer through /v1/chat/completions, stored and stateless, and
	// facade takes those rounds: its baseline is the same round's
	// WebSocket relay, which it measured itself on an agentik of its own.
	var fr *facadeRuns
	if b.want["facade"] {
		fr = &facadeRuns{}
	}
	wsRate := make([]float64, 0, b.sz.RelayRounds)
	var wsResume, respResume, a2aResume []float64
	rates := make([][]float64, len(projections))
	var keys []string // of every run: each must have made one model call
	for round := range b.sz.RelayRounds {
		id, err := b.createConversation(ctx, root, "protocols-ws")
		if err != nil {
			return err
		}
		keys = append(keys, id)
		s := newSink(id, nil)
		rt.set(id, s)
		if _, err := ws.subscribe(ctx, "conversation", id, -1); err != nil {
			return err
		}
		b.phase(fmt.Sprintf("%d-ws", round+1))
		c0 := t.CPU()
		t0 := time.Now()
		seq, err := sendTurn(ctx, ws, id, prompt(n, 0, id))
		if err != nil {
			return err
		}
		if err := wait(ctx, s.done, 2*time.Minute, "protocols ws end"); err != nil {
			return err
		}
		if s.text.String() != want {
			return fmt.Errorf("protocols: the WebSocket text differs from the model's")
		}
		wsRate = append(wsRate, float64(n)/time.Since(t0).Seconds())
		line := fmt.Sprintf("protocols round %d: WebSocket %.0f", round+1, wsRate[round])
		cpuLine := fmt.Sprintf("protocols round %d server CPU: WebSocket %d", round+1, (t.CPU() - c0).Milliseconds())
		if fr != nil { // the facade scenario's streams, against this round's WebSocket relay
			b.phase(fmt.Sprintf("%d-facade", round+1))
			if err := b.facadeRound(ctx, root, model, round, want, fr); err != nil {
				return err
			}
			fr.ws = append(fr.ws, wsRate[round])
		}
		for i, p := range projections {
			b.phase(fmt.Sprintf("%d-%s", round+1, strings.ToLower(strings.Fields(p.name)[0])))
			t0 := time.Now()
			key := fmt.Sprintf("bench-%d-%d-%d", b.start.UnixNano(), round, i)
			keys = append(keys, key)
			c0 := t.CPU()
			got, err := p.run(ctx, key)
			if err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			rate := float64(n) / time.Since(t0).Seconds()
			if got != want {
				return fmt.Errorf("%s: the streamed text differs from the model's (%d bytes, want %d)", p.name, len(got), len(want))
			}
			rates[i] = append(rates[i], rate)
			cpuLine += fmt.Sprintf(", %s %d", strings.Fields(p.name)[0], (t.CPU() - c0).Milliseconds())
			line += fmt.Sprintf(", %s %.0f", strings.Fields(p.name)[0], rate)
		}
		b.progress("%s tokens/s", line)
		b.progress("%s ms", cpuLine)

		b.phase(fmt.Sprintf("%d-resumes", round+1))
		// Resumes of the ended turns, each from its start: the WebSocket
		// subscription from the turn's first seq, the Responses stream
		// with starting_after=0, the A2A resubscription to the task.
		t0 = time.Now()
		if err := b.checkResume(ctx, root, id, seq-1, want); err != nil {
			return err
		}
		wsResume = append(wsResume, float64(n)/time.Since(t0).Seconds())
		t0 = time.Now()
		got, err := b.sseText(ctx, root+"/v1/responses/"+respID+"?stream=true&starting_after=0", nil, nil, responsesDelta)
		if err != nil || got != want {
			return fmt.Errorf("Responses resume of %s: %v (%d bytes, want %d)", respID, err, len(got), len(want))
		}
		respResume = append(respResume, float64(n)/time.Since(t0).Seconds())
		t0 = time.Now()
		got, err = b.sseText(ctx, root+"/a2a/agentik", nil, map[string]any{"jsonrpc": "2.0", "id": 3, "method": "SubscribeToTask", "params": map[string]any{"id": taskID}}, a2aDelta)
		if err != nil || got != want {
			return fmt.Errorf("A2A resubscription to %s: %v (%d bytes, want %d)", taskID, err, len(got), len(want))
		}
		a2aResume = append(a2aResume, float64(n)/time.Since(t0).Seconds())
		b.progress("protocols round %d resumes: WebSocket %.0f, Responses %.0f, A2A %.0f tokens/s", round+1, wsResume[round], respResume[round], a2aResume[round])
	}
	b.facadeRuns = fr
	for _, k := range keys {
		if c := b.fake.calls(k); c != 1 {
			return fmt.Errorf("run %s made %d model calls, want 1 (a title call by the model?)", k, c)
		}
	}
	note := fmt.Sprintf("%d tokens, median of %d; raw SSE reader, text exact; stored like the WS turn", n, b.sz.RelayRounds)
	rnote := fmt.Sprintf("%d tokens of an ended turn, from its start, median of %d; text exact", n, b.sz.RelayRounds)
	b.add(Row{Scenario: "protocols", Metric: "resume, Responses starting_after=0 (bare: the WS resume)", Unit: "tokens/s", Bare: median(wsResume), Agentik: median(respResume), Note: rnote}, nil)
	b.add(Row{Scenario: "protocols", Metric: "resume, A2A SubscribeToTask (bare: the WS resume)", Unit: "tokens/s", Bare: median(wsResume), Agentik: median(a2aResume), Note: rnote + "; an ended task is its snapshot"}, nil)
	// Issue 27's own comparison: the Responses stream beside the chat
	// completions stream, both stored, in the same run.
	b.add(Row{Scenario: "protocols", Metric: "streamed relay, Responses (bare: chat completions, stored)", Unit: "tokens/s", Bare: median(rates[1]), Agentik: median(rates[0]),
		Target: "≥ 0.8×", Note: note}, func(r Row) bool { return r.Ratio >= 0.8 })
	for i, p := range projections {
		b.add(Row{Scenario: "protocols", Metric: "streamed relay, " + p.name + " (bare: the WS relay)", Unit: "tokens/s", Bare: median(wsRate), Agentik: median(rates[i]),
			Target: "≥ 0.8× WS", Note: note}, func(r Row) bool { return r.Ratio >= 0.8 })
	}
	return nil
}

// deltaFunc takes one SSE data payload and returns the answer text it
// carries, and whether the stream is done (the projection's last event).
type deltaFunc func(data []byte) (text string, done bool, err error)

func responsesDelta(data []byte) (string, bool, error) { return responsesDeltaID(nil)(data) }

// responsesDeltaID is responsesDelta that keeps the response's id in *id.
func responsesDeltaID(id *string) deltaFunc {
	return func(data []byte) (string, bool, error) {
		var e struct {
			Type     string `json:"type"`
			Delta    string `json:"delta"`
			Response *struct {
				ID string `json:"id"`
			} `json:"response"`
		}
		if err := json.Unmarshal(data, &e); err != nil {
			return "", false, err
		}
		if id != nil && e.Response != nil && *id == "" {
			*id = e.Response.ID
		}
		return responsesEvent(e.Type, e.Delta, data)
	}
}

func responsesEvent(typ, delta string, data []byte) (string, bool, error) {
	e := struct{ Type, Delta string }{typ, delta}
	switch e.Type {
	case "response.output_text.delta":
		return e.Delta, false, nil
	case "response.completed":
		return "", true, nil
	case "response.failed", "response.incomplete", "error":
		return "", true, fmt.Errorf("%s: %.300s", e.Type, data)
	}
	return "", false, nil
}

func chatDelta(data []byte) (string, bool, error) {
	if string(data) == "[DONE]" {
		return "", true, nil
	}
	var c struct {
		Choices []struct {
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return "", false, err
	}
	if len(c.Error) > 0 {
		return "", true, fmt.Errorf("%s", c.Error)
	}
	if len(c.Choices) > 0 {
		return c.Choices[0].Delta.Content, false, nil
	}
	return "", false, nil
}

// typedDelta reads the front-end streams: {"type": textType, "delta"}.
func typedDelta(textType string) deltaFunc {
	return func(data []byte) (string, bool, error) {
		if string(data) == "[DONE]" {
			return "", true, nil
		}
		var e struct {
			Type  string `json:"type"`
			Delta string `json:"delta"`
		}
		if err := json.Unmarshal(data, &e); err != nil {
			return "", false, err
		}
		switch e.Type {
		case textType:
			return e.Delta, false, nil
		case "error", "RUN_ERROR":
			return "", true, fmt.Errorf("%.300s", data)
		case "finish", "RUN_FINISHED":
			return "", true, nil
		}
		return "", false, nil
	}
}

func a2aDelta(data []byte) (string, bool, error) { return a2aDeltaID(nil)(data) }

// a2aDeltaID is a2aDelta that keeps the task's id in *id, and reads a
// task snapshot's artifacts (the stream's first frame: what the task holds so far).
func a2aDeltaID(id *string) deltaFunc {
	return func(data []byte) (string, bool, error) {
		var e struct {
			Result struct {
				TaskID string `json:"taskId"`
				Task   *struct {
					ID        string `json:"id"`
					Artifacts []struct {
						Parts []struct {
							Text *string `json:"text"`
						} `json:"parts"`
					} `json:"artifacts"`
					Status struct {
						State string `json:"state"`
					} `json:"status"`
				} `json:"task"`
				ArtifactUpdate *struct {
					TaskID string `json:"taskId"`
				} `json:"artifactUpdate"`
				StatusUpdate *struct {
					TaskID string `json:"taskId"`
				} `json:"statusUpdate"`
			} `json:"result"`
		}
		if err := json.Unmarshal(data, &e); err != nil {
			return "", false, err
		}
		r := e.Result
		if id != nil && *id == "" {
			switch {
			case r.Task != nil:
				*id = r.Task.ID
			case r.ArtifactUpdate != nil:
				*id = r.ArtifactUpdate.TaskID
			case r.StatusUpdate != nil:
				*id = r.StatusUpdate.TaskID
			}
		}
		// The stream opens with the task as it stands: on a loaded machine
		// its artifact may already hold the first tokens, which the
		// updates after it append to.
		if t := r.Task; t != nil {
			var sb strings.Builder
			for _, a := range t.Artifacts {
				for _, p := range a.Parts {
					if p.Text != nil {
						sb.WriteString(*p.Text)
					}
				}
			}
			return sb.String(), t.Status.State == "TASK_STATE_COMPLETED", nil
		}
		return a2aUpdate(data)
	}
}

func a2aUpdate(data []byte) (string, bool, error) {
	var e struct {
		Result struct {
			ArtifactUpdate *struct {
				Artifact struct {
					Parts []struct {
						Text *string `json:"text"`
					} `json:"parts"`
				} `json:"artifact"`
			} `json:"artifactUpdate"`
			StatusUpdate *struct {
				Status struct {
					State string `json:"state"`
				} `json:"status"`
			} `json:"statusUpdate"`
		} `json:"result"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(data, &e); err != nil {
		return "", false, err
	}
	if len(e.Error) > 0 {
		return "", true, fmt.Errorf("%s", e.Error)
	}
	if u := e.Result.ArtifactUpdate; u != nil {
		var sb strings.Builder
		for _, p := range u.Artifact.Parts {
			if p.Text != nil {
				sb.WriteString(*p.Text)
			}
		}
		return sb.String(), false, nil
	}
	if u := e.Result.StatusUpdate; u != nil {
		switch u.Status.State {
		case "TASK_STATE_COMPLETED":
			return "", true, nil
		case "TASK_STATE_FAILED", "TASK_STATE_CANCELED":
			return "", true, fmt.Errorf("task %s", u.Status.State)
		}
	}
	return "", false, nil
}

// mcpDelta reads a tools/call stream: progress notifications carry the
// answer's pieces; the call's result ends it.
func mcpDelta(data []byte) (string, bool, error) {
	var e struct {
		Method string `json:"method"`
		Params struct {
			Message string `json:"message"`
		} `json:"params"`
		Result *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(data, &e); err != nil {
		return "", false, err
	}
	switch {
	case len(e.Error) > 0:
		return "", true, fmt.Errorf("%s", e.Error)
	case e.Result != nil && e.Result.IsError:
		return "", true, fmt.Errorf("tool error: %.300s", data)
	case e.Result != nil:
		return "", true, nil
	case e.Method == "notifications/progress":
		return e.Params.Message, false, nil
	}
	return "", false, nil
}

// sseText posts body to url and reads the SSE answer until read says it is
// done, returning the text the stream carried.
func (b *bench) sseText(ctx context.Context, url string, header http.Header, body any, read deltaFunc) (string, error) {
	method, rd := http.MethodGet, io.Reader(nil)
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return "", err
		}
		method, rd = http.MethodPost, bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
		return "", fmt.Errorf("%s: %s", resp.Status, msg)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var text strings.Builder
	for sc.Scan() {
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		s, done, err := read(bytes.TrimSpace(data))
		if err != nil {
			return "", err
		}
		text.WriteString(s)
		if done {
			return text.String(), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("the stream ended before its last event (%d bytes of text)", text.Len())
}

// mcpSession initializes an MCP session and returns the header that
// names it.
func (b *bench) mcpSession(ctx context.Context, root string) (http.Header, error) {
	raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "agentik-bench", "version": "1"}}})
	post := func(raw []byte, h http.Header) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, root+"/mcp", bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range h {
			req.Header[k] = v
		}
		return b.hc.Do(req)
	}
	resp, err := post(raw, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp initialize: %w", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		return nil, fmt.Errorf("mcp initialize: %s (session %q)", resp.Status, sid)
	}
	h := http.Header{"Mcp-Session-Id": {sid}}
	raw, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	if resp, err = post(raw, h); err != nil {
		return nil, fmt.Errorf("mcp initialized: %w", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return h, nil
}
