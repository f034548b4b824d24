package archive

import (
	"encoding/json"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// chatGPTConversation is one conversation of the conversations.json of a
// ChatGPT data export: a tree of nodes (mapping), each with its parent and
// children; current_node is the leaf of the branch the user last saw.
type chatGPTConversation struct {
	ID             string                 `json:"id"`
	ConversationID string                 `json:"conversation_id"`
	Title          string                 `json:"title"`
	CreateTime     *float64               `json:"create_time"`
	UpdateTime     *float64               `json:"update_time"`
	Mapping        map[string]chatGPTNode `json:"mapping"`
	CurrentNode    string                 `json:"current_node"`
}

type chatGPTNode struct {
	Message *struct {
		Author struct {
			Role string `json:"role"`
		} `json:"author"`
		CreateTime *float64 `json:"create_time"`
		Content    struct {
			ContentType string            `json:"content_type"`
			Parts       []json.RawMessage `json:"parts"`
		} `json:"content"`
		Metadata struct {
			Hidden bool `json:"is_visually_hidden_from_conversation"`
		} `json:"metadata"`
	} `json:"message"`
	Parent   *string  `json:"parent"`
	Children []string `json:"children"`
}

// parseChatGPT reads ChatGPT's conversations.json: of each conversation,
// its user and assistant text as a tree of branches (a regenerated answer
// or an edited question is a sibling branch, as here), with current_node
// (the branch shown last) as the head. System and tool messages, hidden
// ones and non-text parts (images, files) are left out; a message follows
// its nearest ancestor that is kept. The source id is the conversation's
// id.
func parseChatGPT(body []byte) ([]agent.ImportConversation, error) {
	var convs []chatGPTConversation
	if err := json.Unmarshal(body, &convs); err != nil {
		return nil, agent.Errorf(agent.CodeBadRequest, "not a ChatGPT conversations.json: %s", protocol.JSONProblem(body, err))
	}
	if len(convs) > agent.MaxImportConversations {
		return nil, agent.Errorf(agent.CodeTooLarge, "an import holds at most %d conversations, got %d; split the file, or import it with `agentik import FILE`, which sends it in parts", agent.MaxImportConversations, len(convs))
	}
	out := make([]agent.ImportConversation, 0, len(convs))
	for i, c := range convs {
		id := c.ConversationID
		if id == "" {
			id = c.ID
		}
		if id == "" {
			return nil, agent.Errorf(agent.CodeBadRequest, "ChatGPT conversation %d has no id", i)
		}
		// current_node must lead up to a root: at most one step per node,
		// so a cycle cannot loop.
		for at, steps := c.CurrentNode, 0; at != ""; steps++ {
			n, ok := c.Mapping[at]
			if !ok || steps > len(c.Mapping) {
				return nil, agent.Errorf(agent.CodeBadRequest, "ChatGPT conversation %d: node %q is missing or its parents loop", i, agent.Shorten(at, 40))
			}
			if n.Parent == nil {
				break
			}
			at = *n.Parent
		}
		ic := agent.ImportConversation{Source: "chatgpt:" + id, Title: c.Title, CreatedAt: unixTime(c.CreateTime), UpdatedAt: unixTime(c.UpdateTime)}
		var loop string
		ic.Messages, ic.Head, loop = chatGPTTree(c)
		if loop != "" {
			return nil, agent.Errorf(agent.CodeBadRequest, "ChatGPT conversation %d: the parents of node %q loop", i, agent.Shorten(loop, 40))
		}
		out = append(out, ic)
	}
	return out, nil
}

// chatGPTTree walks c's mapping from its roots, depth first (each node's
// children in the order of its children list, then by time), and returns
// the messages kept, each with the node id as ID and its nearest kept
// ancestor as ParentID, and the kept node at or above current_node; or, as
// loop, a node no root leads to (its parents loop).
func chatGPTTree(c chatGPTConversation) (ms []agent.Message, head, loop string) {
	kids := map[string][]string{}
	var roots []string
	for id, n := range c.Mapping {
		if n.Parent == nil {
			roots = append(roots, id)
			continue
		}
		if _, ok := c.Mapping[*n.Parent]; !ok {
			roots = append(roots, id)
			continue
		}
		kids[*n.Parent] = append(kids[*n.Parent], id)
	}
	order := func(parent string, ids []string) {
		pos := map[string]int{}
		for k, id := range c.Mapping[parent].Children {
			if _, ok := pos[id]; !ok {
				pos[id] = k
			}
		}
		rank := func(id string) (int, float64) {
			p, ok := pos[id]
			if !ok {
				p = len(pos)
			}
			t := 0.0
			if m := c.Mapping[id].Message; m != nil && m.CreateTime != nil {
				t = *m.CreateTime
			}
			return p, t
		}
		sort.Slice(ids, func(a, b int) bool {
			pa, ta := rank(ids[a])
			pb, tb := rank(ids[b])
			if pa != pb {
				return pa < pb
			}
			if ta != tb {
				return ta < tb
			}
			return ids[a] < ids[b]
		})
	}
	order("", roots)
	kept := map[string]string{} // node id → the kept node at or above it ("" = none)
	type step struct{ id, above string }
	stack := make([]step, 0, len(roots))
	for k := len(roots) - 1; k >= 0; k-- {
		stack = append(stack, step{roots[k], ""})
	}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if _, seen := kept[s.id]; seen {
			continue
		}
		above := s.above
		if m, ok := chatGPTMessage(c.Mapping[s.id]); ok {
			m.ID, m.ParentID = s.id, s.above
			ms = append(ms, m)
			above = s.id
		}
		kept[s.id] = above
		cs := kids[s.id]
		order(s.id, cs)
		for k := len(cs) - 1; k >= 0; k-- {
			stack = append(stack, step{cs[k], above})
		}
	}
	if len(kept) < len(c.Mapping) {
		var lost []string
		for id := range c.Mapping {
			if _, ok := kept[id]; !ok {
				lost = append(lost, id)
			}
		}
		sort.Strings(lost)
		return nil, "", lost[0]
	}
	return ms, kept[c.CurrentNode], ""
}

// chatGPTMessage is node n's message when it is one to keep: user or
// assistant text, not hidden.
func chatGPTMessage(n chatGPTNode) (agent.Message, bool) {
	m := n.Message
	if m == nil || m.Metadata.Hidden {
		return agent.Message{}, false
	}
	var typ string
	switch m.Author.Role {
	case "user":
		typ = agent.MessageUser
	case "assistant":
		typ = agent.MessageAssistant
	default:
		return agent.Message{}, false
	}
	var parts []string
	for _, p := range m.Content.Parts {
		var s string
		if json.Unmarshal(p, &s) == nil && strings.TrimSpace(s) != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return agent.Message{}, false
	}
	return agent.Message{Type: typ, Date: unixTime(m.CreateTime), Content: []agent.Content{agent.Text(strings.Join(parts, "\n\n"))}}, true
}

// unixTime converts ChatGPT's seconds since 1970 (with a fraction); zero
// when absent or absurd.
func unixTime(f *float64) time.Time {
	if f == nil || math.IsNaN(*f) || *f <= 0 || *f > 1e11 {
		return time.Time{}
	}
	sec, frac := math.Modf(*f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC().Truncate(time.Microsecond)
}
