package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/client"
	"github.com/agentik/agentik/internal/protocol"
)

// askElicitation answers, at the terminal, a tool's request for input
// (DESIGN.md §11.6): a form is asked field by field, the required ones
// first (an empty line keeps the default, or leaves the field out), a link is
// shown to open; a/d/c accepts, declines or cancels. A field the server
// refuses is named and the form asked again; an answer given elsewhere
// first (conflict) ends the question.
func askElicitation(ctx context.Context, c *client.Client, convID string, e *agent.Event, answers <-chan string, out io.Writer) {
	read := prompter(ctx, answers, out)
	fmt.Fprintf(out, "\n[%s asks] %s\n", stripControls(e.Server), stripControls(e.Ask))
	if e.Mode == agent.ElicitURL {
		fmt.Fprintf(out, "open: %s\n", stripControls(e.URL))
	}
	fields := formFields(e.Schema)
	for {
		line, ok := read("[a]nswer, [d]ecline or [c]ancel? ")
		if !ok {
			return
		}
		cmd := protocol.Command{Op: protocol.OpElicit, ConversationID: convID, ElicitFields: protocol.ElicitFields{RequestID: e.RequestID}}
		switch strings.ToLower(line) {
		case "a", "answer", "y", "yes", "done":
			cmd.Action = agent.ElicitAccept
			if e.Mode != agent.ElicitURL {
				content := map[string]any{}
				for _, f := range fields {
					v, ok := f.ask(read)
					if !ok {
						return
					}
					if v != nil {
						content[f.name] = v
					}
				}
				cmd.ElicitContent, _ = json.Marshal(content)
			}
		case "d", "decline", "n", "no":
			cmd.Action = agent.ElicitDecline
		case "c", "cancel":
			cmd.Action = agent.ElicitCancel
		default:
			continue
		}
		err := c.Call(ctx, cmd, nil)
		if err == nil {
			return
		}
		fmt.Fprintln(out, "error:", err)
		var ae *agent.Error
		if errors.As(err, &ae) && (ae.Code == agent.CodeConflict || ae.Code == agent.CodeNotFound) {
			return // answered elsewhere, or no longer waiting
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// formField is one property of a requested schema.
type formField struct {
	name     string
	required bool
	prop     struct {
		Type        string          `json:"type"`
		Title       string          `json:"title"`
		Description string          `json:"description"`
		Default     json.RawMessage `json:"default"`
		Enum        []string        `json:"enum"`
		OneOf       []struct {
			Const string `json:"const"`
			Title string `json:"title"`
		} `json:"oneOf"`
		Items *struct {
			Enum  []string `json:"enum"`
			AnyOf []struct {
				Const string `json:"const"`
			} `json:"anyOf"`
		} `json:"items"`
	}
}

// formFields reads a schema's properties in the order the server wrote
// them.
func formFields(schema json.RawMessage) []formField {
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(s.Properties))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out []formField
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return out
		}
		name, _ := t.(string)
		f := formField{name: name}
		if dec.Decode(&f.prop) != nil {
			return out
		}
		for _, r := range s.Required {
			f.required = f.required || r == name
		}
		out = append(out, f)
	}
	// The required fields first (mcp-go hands the schema on as a map, so
	// the rest come in name order).
	slices.SortStableFunc(out, func(a, b formField) int {
		switch {
		case a.required == b.required:
			return 0
		case a.required:
			return -1
		}
		return 1
	})
	return out
}

// ask reads the field's value; nil leaves it out.
func (f formField) ask(read func(string) (string, bool)) (any, bool) {
	p := f.prop
	label := f.name
	if p.Title != "" {
		label += " (" + p.Title + ")"
	}
	var hints []string
	choices := p.Enum
	for _, o := range p.OneOf {
		choices = append(choices, o.Const)
	}
	if p.Items != nil {
		choices = append(choices, p.Items.Enum...)
		for _, o := range p.Items.AnyOf {
			choices = append(choices, o.Const)
		}
	}
	switch {
	case len(choices) > 0 && p.Type == "array":
		hints = append(hints, "some of "+strings.Join(choices, ", ")+", comma-separated")
	case len(choices) > 0:
		hints = append(hints, "one of "+strings.Join(choices, ", "))
	case p.Type == "boolean":
		hints = append(hints, "y/n")
	}
	if len(p.Default) > 0 {
		hints = append(hints, "default "+stripControls(string(p.Default)))
	}
	if f.required {
		hints = append(hints, "required")
	}
	prompt := "  " + stripControls(label)
	if len(hints) > 0 {
		prompt += " [" + strings.Join(hints, "; ") + "]"
	}
	line, ok := read(prompt + ": ")
	if !ok {
		return nil, false
	}
	if line == "" {
		if len(p.Default) > 0 {
			var v any
			_ = json.Unmarshal(p.Default, &v)
			return v, true
		}
		return nil, true
	}
	switch p.Type {
	case "boolean":
		return strings.HasPrefix(strings.ToLower(line), "y") || strings.EqualFold(line, "true"), true
	case "number", "integer":
		if n, err := strconv.ParseFloat(line, 64); err == nil {
			return n, true
		}
	case "array":
		var vs []string
		for _, v := range strings.Split(line, ",") {
			if v = strings.TrimSpace(v); v != "" {
				vs = append(vs, v)
			}
		}
		return vs, true
	}
	return line, true // the server says what is wrong with it
}

// progressText is a tool's progress on one line: 2/4 and the message.
func progressText(p *agent.ToolProgress) string {
	s := strconv.FormatFloat(p.Progress, 'f', -1, 64)
	if p.Total > 0 {
		s += "/" + strconv.FormatFloat(p.Total, 'f', -1, 64)
	}
	if p.Message != "" {
		s += " " + oneLine(p.Message, 120)
	}
	return s
}
