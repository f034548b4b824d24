package web

import (
	"net/url"
	"strconv"

	"github.com/agentik/agentik/internal/agent"
)

// Helpers the components call; pure functions of the view models.

func chatID(p Page) string {
	if p.Chat == nil {
		return ""
	}
	return p.Chat.ID
}

func chatTitle(p Page) string {
	switch {
	case p.NotFound:
		return "Not found"
	case p.Chat == nil:
		return Untitled
	}
	return p.Chat.Title
}

func modelLabel(name string) string {
	if name == "" {
		return "Model configured"
	}
	return name
}

func pathEscape(id string) string { return url.PathEscape(id) }

// exportURL is the open conversation's Markdown export (assets/src/app.js
// sets the same on a chat it creates).
func exportURL(p Page) string {
	if p.Chat == nil {
		return ""
	}
	return "/agentik/conversations/" + pathEscape(p.Chat.ID) + "/export?format=markdown"
}

func toolsState(servers []agent.ToolServer) string {
	ready, failed := 0, 0
	for _, s := range servers {
		switch s.State {
		case agent.ToolServerReady:
			ready++
		case agent.ToolServerFailed:
			failed++
		}
	}
	switch {
	case failed > 0:
		return "failed"
	case ready == len(servers):
		return "ready"
	}
	return "partial"
}

func toolsCount(servers []agent.ToolServer) string {
	ready := 0
	for _, s := range servers {
		if s.State == agent.ToolServerReady {
			ready++
		}
	}
	return strconv.Itoa(ready) + "/" + strconv.Itoa(len(servers)) + " ready"
}

func toolState(m MessageView) string {
	switch {
	case !m.HasResult:
		return "running"
	case m.IsError:
		return "error"
	}
	return "done"
}

func toolStatusLabel(m MessageView) string {
	switch toolState(m) {
	case "running":
		return "Running…"
	case "error":
		return "Error"
	}
	return "Done"
}
