package server

import (
	"encoding/json"
	"math"
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
	Parent *string `json:"parent"`
}

// parseChatGPT reads ChatGPT's conversations.json: of each conversation,
// the path from the root to current_node (the branch shown last), its user
// and assistant text. System and tool messages, hidden ones and non-text
// parts (images, files) are left out. The source id is the conversation's
// id.
func parseChatGPT(body []byte) ([]agent.ImportConversation, error) {
	var convs []chatGPTConversation
	if err := json.Unmarshal(body, &convs); err != nil {
		return nil, agent.Errorf(agent.CodeBadRequest, "not a ChatGPT conversations.json: %s", protocol.JSONProblem(err))
	}
	if len(convs) > agent.MaxImportConversations {
		return nil, agent.Errorf(agent.CodeTooLarge, "an import holds at most %d conversations, got %d; split the file", agent.MaxImportConversations, len(convs))
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
		ic := agent.ImportConversation{Source: "chatgpt:" + id, Title: c.Title, CreatedAt: unixTime(c.CreateTime)}
		// From current_node up to the root, then reversed; at most one step
		// per node, so a cycle cannot loop.
		var path []chatGPTNode
		for at, steps := c.CurrentNode, 0; at != ""; steps++ {
			n, ok := c.Mapping[at]
			if !ok || steps > len(c.Mapping) {
				return nil, agent.Errorf(agent.CodeBadRequest, "ChatGPT conversation %d: node %q is missing or its parents loop", i, agent.Shorten(at, 40))
			}
			path = append(path, n)
			if n.Parent == nil {
				break
			}
			at = *n.Parent
		}
		for j := len(path) - 1; j >= 0; j-- {
			m := path[j].Message
			if m == nil || m.Metadata.Hidden {
				continue
			}
			var typ string
			switch m.Author.Role {
			case "user":
				typ = agent.MessageUser
			case "assistant":
				typ = agent.MessageAssistant
			default:
				continue
			}
			var parts []string
			for _, p := range m.Content.Parts {
				var s string
				if json.Unmarshal(p, &s) == nil && strings.TrimSpace(s) != "" {
					parts = append(parts, s)
				}
			}
			if len(parts) == 0 {
				continue
			}
			ic.Messages = append(ic.Messages, agent.Message{
				Type: typ, Date: unixTime(m.CreateTime), Content: []agent.Content{agent.Text(strings.Join(parts, "\n\n"))},
			})
		}
		out = append(out, ic)
	}
	return out, nil
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
