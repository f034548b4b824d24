package store

import (
	"encoding/json"
	"time"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
)

// encodeParams is the params column: the JSON of p, "" for none.
func encodeParams(p *agent.Params) string {
	if p == nil || *p == (agent.Params{}) {
		return ""
	}
	b, err := json.Marshal(p)
	if err != nil {
		return ""
	}
	return string(b)
}

// decodeParams reads the params column; what it cannot read is no params.
func decodeParams(s string) *agent.Params {
	if s == "" {
		return nil
	}
	var p agent.Params
	if json.Unmarshal([]byte(s), &p) != nil || p == (agent.Params{}) {
		return nil
	}
	return &p
}

// encodeTools is the tools column: "" for every tool, else the JSON list.
func encodeTools(t *[]string) string {
	if t == nil {
		return ""
	}
	b, err := json.Marshal(*t)
	if err != nil {
		return ""
	}
	return string(b)
}

// decodeTools reads the tools column; what it cannot read is every tool.
func decodeTools(s string) *[]string {
	if s == "" {
		return nil
	}
	var t []string
	if json.Unmarshal([]byte(s), &t) != nil {
		return nil
	}
	return agent.ChatTools(t)
}

// rename sets a conversation's title. A user's title marks the
// conversation user-titled; a title agentik wrote (auto) is refused with
// agent.ErrUserTitled once a user has given one, checked in the same
// transaction, so a rename racing the model's title always wins.
func rename(tx *gorm.DB, id, title string, auto bool, now time.Time) error {
	cols := map[string]any{"title": title, "updated_at": now}
	if !auto {
		cols["user_titled"] = true
		return updateConversation(tx, id, cols)
	}
	changed, err := updateConversationWhere(tx, cols, "id = ? AND user_titled = ?", id, false)
	if err != nil {
		return err
	}
	if changed == 0 {
		n, err := countConversation(tx, id)
		if err != nil {
			return err
		}
		if n == 0 {
			return agent.Errorf(agent.CodeNotFound, "conversation %q not found", shortID(id))
		}
		return agent.ErrUserTitled
	}
	return nil
}

// updateSettings writes what an updated event changes.
func updateSettings(tx *gorm.DB, id string, s agent.Settings, now time.Time) error {
	cols := map[string]any{}
	if !s.Filing() { // pinning or archiving leaves the conversation's date
		cols["updated_at"] = now
	}
	if s.Pinned != nil {
		cols["pinned"] = *s.Pinned
	}
	if s.Archived != nil {
		cols["archived"] = *s.Archived
	}
	if s.Project != nil {
		cols["project"] = *s.Project
	}
	if s.Title != nil {
		cols["title"], cols["user_titled"] = *s.Title, true
	}
	if s.Model != nil {
		cols["model"] = *s.Model
	}
	if s.SystemPrompt != nil {
		cols["system_prompt"] = columnText(*s.SystemPrompt)
	}
	if s.Params != nil {
		cols["params"] = encodeParams(s.Params)
	}
	if s.Agent != nil {
		cols["agent"] = *s.Agent
	}
	if s.Tools != nil {
		cols["tools"] = encodeTools(agent.ChatTools(*s.Tools))
	}
	return updateConversation(tx, id, cols)
}
