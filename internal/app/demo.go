package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/llm/demo"
	"github.com/agentik/agentik/internal/tool"
)

// Demo mode (--demo, AGENTIK_DEMO=1): the scripted OpenAI-compatible
// endpoint of internal/llm/demo serves on a loopback port and is used
// through the real model adapter, so every answer takes the same path
// as a real model's. A built-in tool lets the script show a tool round
// without any MCP server.

// demoModelName is the model name the demo shows.
const demoModelName = demo.ModelName

// demoNotice labels the UI and the startup log in demo mode.
const demoNotice = "Demo model: answers are scripted by agentik --demo and no real model runs. " +
	"Set OPENAI_BASE_URL and OPENAI_MODEL and restart without --demo to use a real one."

// demoModel is the running demo endpoint.
type demoModel struct {
	config llm.Config // how to reach it
	hs     *http.Server
	done   chan struct{}
}

// startDemo serves the scripted fake model on 127.0.0.1 (a free port).
func startDemo(log *slog.Logger) (*demoModel, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo model: listen: %w", err)
	}
	d := &demoModel{hs: &http.Server{Handler: demo.Handler(), ReadHeaderTimeout: 10 * time.Second}, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		if err := d.hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("demo_model_failed", "err", err)
		}
	}()
	d.config = llm.Config{BaseURL: "http://" + ln.Addr().String() + "/v1", Model: demoModelName}
	log.Warn("demo_model", "model", demoModelName, "note", demoNotice)
	return d, nil
}

// close stops the demo endpoint and waits for it.
func (d *demoModel) close() {
	_ = d.hs.Close()
	<-d.done
}

// demoTools adds the built-in demo tool to the MCP tools (inner, nil
// without an mcp.json). It implements agent.Tools, agent.ContentTools and
// server.ToolLister.
type demoTools struct {
	inner *tool.Manager
}

var (
	_ agent.Tools        = (*demoTools)(nil)
	_ agent.ContentTools = (*demoTools)(nil)
)

// Specs lists the demo tool, then the MCP tools.
func (d *demoTools) Specs(ctx context.Context) []agent.ToolSpec {
	specs := []agent.ToolSpec{{
		Name:        demo.ToolName,
		Description: "Counts the words of a text (agentik's built-in demo tool).",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"the text to count"}},"required":["text"]}`),
	}}
	if d.inner != nil {
		specs = append(specs, d.inner.Specs(ctx)...)
	}
	return specs
}

// CallContent runs the demo tool, or passes the call on to the MCP tools
// with the images of its result.
func (d *demoTools) CallContent(ctx context.Context, name, arguments string) (agent.ToolOutput, error) {
	if name != demo.ToolName && d.inner != nil {
		return d.inner.CallContent(ctx, name, arguments)
	}
	text, err := d.Call(ctx, name, arguments)
	return agent.ToolOutput{Text: text}, err
}

// Call runs the demo tool, or passes the call on to the MCP tools.
func (d *demoTools) Call(ctx context.Context, name, arguments string) (string, error) {
	if name != demo.ToolName {
		if d.inner == nil {
			return "", agent.Errorf(agent.CodeToolError, "unknown tool %q", name)
		}
		return d.inner.Call(ctx, name, arguments)
	}
	var args struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal([]byte(arguments), &args); err != nil {
		return "", agent.Errorf(agent.CodeToolError, "arguments of %s must be a JSON object with a text", name)
	}
	n := len(strings.Fields(args.Text))
	unit := " words"
	if n == 1 {
		unit = " word"
	}
	return "your message has " + strconv.Itoa(n) + unit, nil
}

// Servers lists the built-in demo server, then the MCP servers.
func (d *demoTools) Servers() []agent.ToolServer {
	out := []agent.ToolServer{{Name: "demo", Transport: "builtin", State: agent.ToolServerReady, Tools: []string{demo.ToolName}}}
	if d.inner != nil {
		out = append(out, d.inner.Servers()...)
	}
	return out
}

// modelNotice is what the UI's banner area says about the model: the demo
// label, or what the start-up probe of the endpoint found.
type modelNotice struct {
	msg  atomic.Pointer[string]
	done chan struct{} // closed when the probe has ended; nil without one
}

func (n *modelNotice) set(s string) { n.msg.Store(&s) }

// text is the notice now ("" for none).
func (n *modelNotice) text() string {
	if p := n.msg.Load(); p != nil {
		return *p
	}
	return ""
}

// probe checks the endpoint of cfg in the background (llm.Probe), logs
// what is wrong and sets the notice; wait waits for it.
func (n *modelNotice) probe(ctx context.Context, cfg llm.Config, log *slog.Logger) {
	n.done = make(chan struct{})
	go func() {
		defer close(n.done)
		if err := llm.Probe(ctx, cfg); err != nil && ctx.Err() == nil {
			log.Warn("model_endpoint_problem", "err", err)
			n.set("Check the model settings: " + err.Error() + ".")
		}
	}()
}

func (n *modelNotice) wait() {
	if n.done != nil {
		<-n.done
	}
}
