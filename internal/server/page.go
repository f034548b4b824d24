package server

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"

	"github.com/a-h/templ"

	"github.com/agentik/agentik/assets"
	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/web"
)

// Page limits.
const (
	// sidebarSize is how many conversations the sidebar lists on first
	// paint; the rest are paged in by the JS layer (assets/src/sidebar.js)
	// as the list is scrolled.
	sidebarSize = 200
	// PageMessages is how many of the latest messages a conversation page
	// renders by default (Config.PageMessages, also bounded by
	// Config.HistoryBytes); older ones are counted, not shown.
	PageMessages = agent.MaxPageSize
)

// handleIndex serves the new-chat page.
func (s *Server) handleIndex(w http.ResponseWriter, r *http.Request) {
	p, err := s.page(r.Context(), "")
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	// ?knowledge=vs_…: the new chat searches that base (one the caller
	// may read; another's is left out as an unknown one is).
	if id := r.URL.Query().Get("knowledge"); id != "" && s.cfg.Files != nil {
		if k, err := s.cfg.Files.Knowledge(r.Context(), id); err == nil {
			p.Attach = &k
		}
	}
	s.renderPage(w, r, http.StatusOK, p)
}

// handleChat serves a conversation's page with its history on first paint;
// an unknown id gets a 404 page.
func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	// The conversation is read before its messages: if a turn starts in
	// between, its messages are on the page and the resume cursor
	// (web.ChatView.LastSeq) is past them, so nothing is lost or doubled.
	c, err := s.convs.Get(ctx, id)
	if errors.Is(err, agent.ErrNotFound) {
		p, perr := s.page(ctx, "")
		if perr != nil {
			s.pageError(w, r, perr)
			return
		}
		p.NotFound, p.Title = true, "Not found · agentik"
		s.renderPage(w, r, http.StatusNotFound, p)
		return
	}
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	n, lastSeq, err := s.convs.PathInfo(ctx, c)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	// The latest messages that fit Config.PageMessages and HistoryBytes;
	// the rest are counted, and paged in by the JS layer on request.
	var hp agent.HistoryPage
	if n > 0 {
		hp, err = s.convs.History(ctx, agent.MessageQuery{ConversationID: id, End: n, Limit: s.cfg.PageMessages, Bytes: s.cfg.HistoryBytes})
		if err != nil {
			s.pageError(w, r, err)
			return
		}
	}
	msgs, offset := hp.Messages, hp.NextEnd
	p, err := s.page(ctx, id)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	p.Chat = web.NewChatView(c, msgs, offset)
	if s.cfg.Feedback != nil && !c.Temp {
		ratings, err := s.ratings(ctx, c.ID)
		if err != nil {
			s.pageError(w, r, err)
			return
		}
		p.Chat.SetRatings(ratings)
	}
	p.Chat.Viewer = s.viewerOf(ctx, c) // project.go
	if me := agent.PrincipalFrom(ctx); me.Admin() && me.UserID != "" && agent.OwnerOf(c) != me.UserID {
		p.Chat.OwnerLabel = agent.OwnerOf(c) // an admin reads another's chat: read-only (admin.go)
		if a, err := s.accounts(); err == nil {
			if u, err := a.User(ctx, agent.OwnerOf(c)); err == nil {
				p.Chat.OwnerLabel = cmp.Or(u.Email, u.Name, u.ID)
			}
		}
	}
	if p.ModelConfigured {
		// The footer names the model that wrote the chat's last answer,
		// else the one its next turn runs on (assets/src/app.js keeps it
		// so as answers come and the picker changes).
		p.ModelName = cmp.Or(p.Chat.LastModel(), s.runner.ModelNameOf(ctx, c))
	}
	p.Chat.LastSeq = max(p.Chat.LastSeq, lastSeq) // resume after other branches' messages too
	p.Title = p.Chat.Title + " · agentik"
	s.renderPage(w, r, http.StatusOK, p)
}

// page builds what every page shows: the sidebar, model and tool servers.
func (s *Server) page(ctx context.Context, current string) (web.Page, error) {
	// The sidebar holds the caller's own conversations (and her
	// projects'), an admin's too: everyone's are in the admin panel.
	cs, total, err := s.convs.List(agent.OwnedBy(ctx, agent.PrincipalFrom(ctx).UserID), 0, sidebarSize)
	if err != nil {
		return web.Page{}, err
	}
	p := web.Page{
		Title:             "agentik",
		ScriptURL:         assets.URL("app.js"),
		StyleURL:          assets.URL("app.css"),
		IconURL:           assets.URL("icon.svg"),
		MathScriptURL:     assets.URL("math.js"),
		MathStyleURL:      assets.URL("math.css"),
		MermaidScriptURL:  assets.URL("mermaid.js"),
		ModelConfigured:   s.runner.ModelConfigured(),
		SystemPrompt:      s.runner.SystemPrompt(),
		Conversations:     web.ConversationItems(cs, current),
		ConversationTotal: total,
		ToolServers:       s.toolServers(ctx).Servers,
		SignOut:           s.authOn(),
	}
	if me := agent.PrincipalFrom(ctx).UserID; me != "" {
		rep, err := s.cfg.Budgets.Report(ctx, me, "", "")
		if err != nil {
			return web.Page{}, err
		}
		p.Budget = web.NewBudgetNote(me, rep.Budget)
	}
	if s.cfg.ModelNotice != nil {
		p.ModelNotice = s.cfg.ModelNotice()
	}
	var input map[string]bool
	if p.InboxCount, input, err = s.inboxCount(ctx); err != nil {
		return web.Page{}, err
	}
	web.SetInput(p.Conversations, input)
	if p.ModelConfigured {
		p.ModelName = s.runner.DefaultModelName() // the admin panel's default as it is now
	}
	p.Nav = "chats"
	p.Admin = agent.PrincipalFrom(ctx).Admin()
	if s.cfg.Preferences != nil {
		if p.Preferences, err = s.cfg.Preferences.Mine(ctx); err != nil {
			return web.Page{}, err
		}
	}
	return p, nil
}

// renderSection serves a management page (web.managePage: schedules,
// projects, agents, settings) inside the app's layout, named nav in the
// navigation and title in the document.
func (s *Server) renderSection(w http.ResponseWriter, r *http.Request, nav, title string, c templ.Component) {
	p, err := s.page(r.Context(), "")
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	p.Nav, p.Title, p.Section = nav, title+" · agentik", c
	s.renderPage(w, r, http.StatusOK, p)
}

// renderPage writes a page with a fresh CSP nonce.
func (s *Server) renderPage(w http.ResponseWriter, r *http.Request, code int, p web.Page) {
	p.Nonce = pageHeaders(w.Header())
	w.WriteHeader(code)
	if err := web.Layout(p).Render(templ.WithNonce(r.Context(), p.Nonce), w); err != nil {
		s.log.Debug("page_render", "path", r.URL.Path, "err", err)
	}
}

// pageError answers a failed page load with a short plain-text page.
func (s *Server) pageError(w http.ResponseWriter, r *http.Request, err error) {
	e := s.wireError(r.Method+" "+r.URL.Path, err)
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, e.Message, status(e.Code))
}

// pageHeaders sets the security headers of an HTML page and returns the
// nonce its scripts must carry. Only the nonce'd bundle runs: no inline
// script, no inline handler, no remote image, no framing.
func pageHeaders(h http.Header) string {
	nonce := newNonce()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", contentSecurityPolicy(nonce))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	return nonce
}

// contentSecurityPolicy is the CSP of a page whose scripts carry nonce.
func contentSecurityPolicy(nonce string) string {
	return "default-src 'self'; " +
		"script-src 'nonce-" + nonce + "'; " +
		"style-src 'self'; " +
		"img-src 'self' data: blob:; " +
		"connect-src 'self'; " +
		"object-src 'none'; " +
		"base-uri 'none'; " +
		"form-action 'self'; " +
		"frame-ancestors 'none'"
}

// newNonce returns 128 random bits, base64-encoded.
func newNonce() string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return base64.StdEncoding.EncodeToString(b)
}
