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
