package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// Texts of derived replies.
const (
	echoPrefix      = "You said: "
	toolSaidPrefix  = "tool said: "
	reasoningPrefix = "Thinking about: "
)

// kv is one key[=value] of a directive.
type kv struct{ key, value string }

// parseDirectives splits s into its plain text (directives removed, spaces
// collapsed) and its [[…]] directives, one []kv per bracket.
func parseDirectives(s string) (string, [][]kv, error) {
	var plain strings.Builder
	var groups [][]kv
	for {
		i := strings.Index(s, "[[")
		if i < 0 {
			plain.WriteString(s)
			break
		}
		plain.WriteString(s[:i])
		plain.WriteByte(' ')
		rest := s[i+2:]
		var group []kv
		for {
			rest = strings.TrimLeft(rest, " \t\n")
			if strings.HasPrefix(rest, "]]") {
				rest = rest[2:]
				break
			}
			if rest == "" {
				return "", nil, fmt.Errorf("unclosed directive %q", s[i:])
			}
			k := 0
			for k < len(rest) && (rest[k] >= 'a' && rest[k] <= 'z' || rest[k] == '_') {
				k++
			}
			if k == 0 {
				return "", nil, fmt.Errorf("bad directive %q", s[i:])
			}
			d := kv{key: rest[:k]}
			rest = rest[k:]
			if strings.HasPrefix(rest, "=") {
				rest = rest[1:]
				switch d.key {
				case "args": // a JSON value, which may hold spaces and brackets
					dec := json.NewDecoder(strings.NewReader(rest))
					var raw json.RawMessage
					if err := dec.Decode(&raw); err != nil {
						return "", nil, fmt.Errorf("directive args: %w", err)
					}
					d.value = string(raw)
					rest = rest[dec.InputOffset():]
				case "text": // everything up to ]]
					end := strings.Index(rest, "]]")
					if end < 0 {
						return "", nil, fmt.Errorf("unclosed directive %q", s[i:])
					}
					d.value, rest = rest[:end], rest[end:]
				default:
					end := strings.IndexAny(rest, " \t\n]")
					if end < 0 {
						end = len(rest)
					}
					d.value, rest = rest[:end], rest[end:]
				}
			}
			group = append(group, d)
		}
		groups = append(groups, group)
		s = rest
	}
	return strings.Join(strings.Fields(plain.String()), " "), groups, nil
}

// derive is the reply the last user message of req asks for (the package
// doc lists the directives).
func derive(req Request) Reply {
	lastUser := -1
	for i, m := range req.Messages {
		if m.Role == "user" {
			lastUser = i
		}
	}
	var said string
	if lastUser >= 0 {
		said = req.Messages[lastUser].Content
	}
	plain, groups, err := parseDirectives(said)
	if err != nil {
		return Reply{Status: http.StatusBadRequest, ErrorMessage: "llmtest: " + err.Error()}
	}
	r := Reply{Text: "OK."}
	if plain != "" {
		r.Text = echoPrefix + plain
	}
	var tools []agent.ToolCall
	cut := false
	for _, g := range groups {
		for _, d := range g {
			switch d.key {
			case "tokens":
				n, err := strconv.Atoi(d.value)
				if err != nil || n < 0 {
					return badDirective(d)
				}
				r.Text = Tokens(n)
			case "text":
				r.Text = d.value
			case "system":
				r.Text = "(no system prompt)"
				for _, m := range req.Messages {
					if m.Role == "system" {
						r.Text = m.Content
						break
					}
				}
			case "delay":
				v, err := time.ParseDuration(d.value)
				if err != nil {
					return badDirective(d)
				}
				r.Delay = v
			case "wait":
				v, err := time.ParseDuration(d.value)
				if err != nil || v < 0 {
					return badDirective(d)
				}
				r.Wait = v
			case "chunk":
				n, err := strconv.Atoi(d.value)
				if err != nil || n < 0 {
					return badDirective(d)
				}
				r.ChunkSize = n
			case "reasoning":
				topic := plain
				if topic == "" {
					topic = "the request"
				}
				r.Reasoning = reasoningPrefix + topic
				r.ReasoningField = d.value
			case "tool":
				if d.value == "" {
					return badDirective(d)
				}
				tools = append(tools, agent.ToolCall{Name: d.value, Arguments: "{}"})
			case "args":
				if len(tools) == 0 {
					return badDirective(d)
				}
				tools[len(tools)-1].Arguments = d.value
			case "split":
				r.SplitArgs = true
			case "error":
				n, err := strconv.Atoi(d.value)
				if err != nil || n < 400 || n > 599 {
					return badDirective(d)
				}
				r.Status = n
				r.ErrorMessage = "llmtest: error " + d.value + " as asked"
			case "cut":
				cut = true
			default:
				return badDirective(d)
			}
		}
	}
	if len(tools) > 0 {
		results := toolResults(req.Messages[lastUser+1:])
		var pending []agent.ToolCall
		var said []string
		for _, t := range tools {
			res, ok := results[t.Name]
			if !ok {
				pending = append(pending, t)
				continue
			}
			said = append(said, toolSaidPrefix+res)
		}
		if len(pending) > 0 {
			r.ToolCalls, r.Text = pending, ""
		} else {
			r.Text = strings.Join(said, "\n")
		}
	}
	if cut {
		r.CutAfter = max(1, len(plan(r, req).deltas)/2)
	}
	return r
}

func badDirective(d kv) Reply {
	msg := "llmtest: bad directive [[" + d.key
	if d.value != "" {
		msg += "=" + d.value
	}
	return Reply{Status: http.StatusBadRequest, ErrorMessage: msg + "]]"}
}

// toolResults maps tool names to the results found in msgs (the messages
// after the last user message).
func toolResults(msgs []Message) map[string]string {
	names := map[string]string{}
	out := map[string]string{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			names[c.ID] = c.Name
		}
		if m.Role != "tool" {
			continue
		}
		name := names[m.ToolCallID]
		if name == "" {
			name = m.Name
		}
		out[name] = m.Content
	}
	return out
}

// Tokens is the answer of [[tokens=n]]: n words of deterministic text,
// "t1 t2 … tn", so tests can check what arrived.
func Tokens(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteByte(' ')
		}
		b.WriteByte('t')
		b.WriteString(strconv.Itoa(i))
	}
	return b.String()
}
