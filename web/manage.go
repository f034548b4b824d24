package web

import "github.com/agentik/agentik/internal/agent"

// current is the aria-current of a nav link: "page" on its own page.
func current(page, link string) string {
	if page == link {
		return "page"
	}
	return "false"
}

// themeLabel is what the theme setting calls theme t.
func themeLabel(t string) string {
	switch t {
	case agent.ThemeLight:
		return "Light"
	case agent.ThemeDark:
		return "Dark"
	}
	return "As the system"
}

// projectName is the name of project id among ps (the id when unknown).
func projectName(ps []AgentOption, id string) string {
	for _, p := range ps {
		if p.Slug == id {
			return "Project " + p.Name
		}
	}
	return id
}

// MemoryLabel is what the memory page calls block label: the two default
// blocks by whom they are about, others by their label.
func MemoryLabel(label string) string {
	switch label {
	case agent.MemoryHuman:
		return "About you"
	case agent.MemoryPersona:
		return "About me"
	}
	return label
}

// memoryHint says what a default block holds ("" for others).
func memoryHint(label string) string {
	switch label {
	case agent.MemoryHuman:
		return "What the agent knows about you: your name, your work, your preferences."
	case agent.MemoryPersona:
		return "Who the agent is with you: the tone and habits it keeps in your conversations."
	}
	return ""
}

// memoryAgentName is the name of the agent whose memory the page shows.
func memoryAgentName(v *MemoryView) string {
	for _, a := range v.Agents {
		if a.Slug == v.Agent {
			return a.Name
		}
	}
	return v.Agent
}
