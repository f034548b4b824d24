package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/protocol"
)

// facadeRuns are the facade's rounds: the WebSocket relay's rate, then
// /v1 stored and stateless, tokens/s each.
type facadeRuns struct{ ws, stored, stateless []float64 }

// facade: one stream at full speed through the OpenAI-compatible facade
// (go-openai reading agentik's /v1/chat/completions, stateless), against
// the WebSocket relay of the same agentik in the same run. In a run with
// the protocols scenario (just before) the rounds are its: each of its
// rounds streams the facade's two answers after its WebSocket relay, on
// its agentik (titles from the first line changes nothing here: every
// stored conversation of the facade has a title), and these rows carry
// its load; alone, the facade runs its own rounds.
func (b *bench) facade(ctx context.Context) error {
	n := b.sz.RelayTokens
	want := llmtest.Tokens(n)
	if fr := b.facadeRuns; fr != nil {
		b.progress("facade: the protocols scenario's rounds")
		b.facadeRows(fr, func(r Row, pass func(Row) bool) { b.addFrom("protocols", r, pass) })
		return nil
	}
	t, err := b.agentik(ctx, "facade.db")
	if err != nil {
		return err
	}
	defer t.Close()
	model, err := b.facadeModel(ctx, t.URL())
	if err != nil {
		return err
	}
	rt := newRouter()
	ws, err := dialWS(ctx, wsURL(t.URL(), "/agentik/ws"), rt.on)
	if err != nil {
		return err
	}
	defer ws.Close()

	fr := &facadeRuns{}
	for round := range b.sz.RelayRounds {
		// The WebSocket relay.
		id, err := b.createConversation(ctx, t.URL(), "facade-ws")
		if err != nil {
			return err
		}
		s := newSink(id, nil)
		rt.set(id, s)
		if _, err := ws.subscribe(ctx, "conversation", id, -1); err != nil {
			return err
		}
		t0 := time.Now()
		if _, err := sendTurn(ctx, ws, id, prompt(n, 0, id)); err != nil {
			return err
		}
		if err := wait(ctx, s.done, 2*time.Minute, "facade ws end"); err != nil {
			return err
		}
		el := time.Since(t0)
		if s.text.String() != want {
			return fmt.Errorf("facade: the WebSocket text differs from the model's")
		}
		wsRate := float64(n) / el.Seconds()
		if err := b.facadeRound(ctx, t.URL(), model, round, want, fr); err != nil {
			return err
		}
		fr.ws = append(fr.ws, wsRate)
		b.progress("facade round %d: WebSocket %.0f tokens/s, /v1 stored %.0f tokens/s, /v1 stateless %.0f tokens/s", round+1, wsRate, fr.stored[round], fr.stateless[round])
	}
	b.facadeRows(fr, b.add)
	return nil
}

// facadeRound streams the round's two facade answers on root: a stored
// conversation by header (like the WS relay, every event written to the
// log), then a stateless request (temp: nothing written).
func (b *bench) facadeRound(ctx context.Context, root, model string, round int, want string, fr *facadeRuns) error {
	n := b.sz.RelayTokens
	stored, err := b.createConversation(ctx, root, "facade-v1")
	if err != nil {
		return err
	}
	r, err := b.facadeStream(ctx, root, model, stored, prompt(n, 0, stored), want)
	if err != nil {
		return err
	}
	fr.stored = append(fr.stored, r)
	if r, err = b.facadeStream(ctx, root, model, "", prompt(n, 0, fmt.Sprintf("facade-%d", round)), want); err != nil {
		return err
	}
	fr.stateless = append(fr.stateless, r)
	return nil
}

// facadeRows adds the facade's rows of its rounds fr with add.
func (b *bench) facadeRows(fr *facadeRuns, add func(Row, func(Row) bool)) {
	note := fmt.Sprintf("%d tokens, median of %d; go-openai client, usage included; text exact", b.sz.RelayTokens, len(fr.ws))
	add(Row{Scenario: "facade", Metric: "streamed relay, /v1 with X-Agentik-Conversation (bare: the WS relay)", Unit: "tokens/s", Bare: median(fr.ws), Agentik: median(fr.stored),
		Target: "≥ 0.8× WS", Note: note + "; both stored"}, func(r Row) bool { return r.Ratio >= 0.8 })
	add(Row{Scenario: "facade", Metric: "streamed relay, /v1 stateless (bare: the WS relay)", Unit: "tokens/s", Bare: median(fr.ws), Agentik: median(fr.stateless),
		Target: "≥ 0.8× WS", Note: note + "; a temp conversation writes nothing"}, func(r Row) bool { return r.Ratio >= 0.8 })
}

// facadeStream streams one answer through /v1/chat/completions (continuing
// conversation convID when set) and returns tokens/s.
func (b *bench) facadeStream(ctx context.Context, root, model, convID, text, want string) (float64, error) {
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = root + "/v1"
	cfg.HTTPClient = &http.Client{Transport: headerTransport{base: b.hc.Transport, conv: convID}}
	client := openai.NewClientWithConfig(cfg)
	t0 := time.Now()
	st, err := client.CreateChatCompletionStream(ctx, openai.ChatCompletionRequest{
		Model: model, Stream: true, StreamOptions: &openai.StreamOptions{IncludeUsage: true},
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: text}},
	})
	if err != nil {
		return 0, fmt.Errorf("facade stream: %w", err)
	}
	defer st.Close()
	var sb strings.Builder
	usage := false
	for {
		resp, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("facade stream: %w", err)
		}
		if len(resp.Choices) > 0 {
			sb.WriteString(resp.Choices[0].Delta.Content)
		}
		usage = usage || resp.Usage != nil
	}
	el := time.Since(t0)
	if sb.String() != want || !usage {
		return 0, fmt.Errorf("facade: the streamed text differs from the model's (%d bytes, want %d) or has no usage", sb.Len(), len(want))
	}
	return float64(len(strings.Fields(want))) / el.Seconds(), nil
}

// headerTransport adds X-Agentik-Conversation when conv is set.
type headerTransport struct {
	base http.RoundTripper
	conv string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.conv != "" {
		r = r.Clone(r.Context())
		r.Header.Set(protocol.ConversationHeader, h.conv)
	}
	base := h.base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}

// facadeModel is the first model GET /v1/models lists.
func (b *bench) facadeModel(ctx context.Context, root string) (string, error) {
	body, err := b.get(ctx, root+"/v1/models")
	if err != nil {
		return "", err
	}
	var list struct{ Data []struct{ ID string } }
	if err := json.Unmarshal(body, &list); err != nil || len(list.Data) == 0 {
		return "", fmt.Errorf("models: %v: %.200s", err, body)
	}
	return list.Data[0].ID, nil
}
