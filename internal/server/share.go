package server

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/a-h/templ"

	"github.com/agentik/agentik/assets"
	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/web"
)

// Share links (docs/PROTOCOL.md, Share links): the ops that make, list and
// revoke them (REST under /agentik and WebSocket ops of the table), and
// the pages /s/{token} (the transcript, read-only) and POST
// /s/{token}/copy (continue it as one's own copy). agent/share.go decides
// what a link shows; this file decides who may open one: a signed-in
// user, or anyone when Config.PublicShares is on (auth.go lets /s/
// through then).

// shares is the server's share links service, or unavailable.
func (s *Server) shares() (*agent.Shares, error) {
	if s.cfg.Shares == nil {
		return nil, agent.Errorf(agent.CodeUnavailable, "this server keeps no share links")
	}
	return s.cfg.Shares, nil
}

// shareOp declares a share links op: run gets the service.
func shareOp[T any](name string, status int, run func(ctx context.Context, sh *agent.Shares, in T) (any, error)) *op {
	return declare(name, status, func(ctx context.Context, s *Server, in T) (any, error) {
		sh, err := s.shares()
		if err != nil {
			return nil, err
		}
		return run(ctx, sh, in)
	})
}

// shareRef names a link: the route's {share_id}.
type shareRef struct {
	ID string `json:"share_id"`
}

func (r *shareRef) check() error { return need("share_id", r.ID) }

// shareCreate is a create_share.
type shareCreate struct {
	conversationRef
	agent.ShareInput
}

var (
	opCreateShare = shareOp(protocol.OpCreateShare, http.StatusCreated, func(ctx context.Context, sh *agent.Shares, in shareCreate) (any, error) {
		return sh.Create(ctx, in.ConversationID, in.ShareInput)
	})
	opListShares = shareOp(protocol.OpListShares, 0, func(ctx context.Context, sh *agent.Shares, _ struct{}) (any, error) {
		list, err := sh.List(ctx)
		if err != nil {
			return nil, err
		}
		return protocol.SharesResult{Shares: nonNil(list)}, nil
	})
	opRevokeShare = shareOp(protocol.OpRevokeShare, http.StatusNoContent, func(ctx context.Context, sh *agent.Shares, in shareRef) (any, error) {
		return protocol.Empty{}, sh.Revoke(ctx, in.ID)
	})
)

// isSharePage reports whether r opens a share link's page.
func isSharePage(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && strings.HasPrefix(r.URL.Path, agent.SharePrefix)
}

// handleSharePage is GET /s/{token}: the shared transcript, read-only; a
// wrong, revoked or expired link is the same 404 page.
func (s *Server) handleSharePage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sh, err := s.shares()
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	token := r.PathValue("token")
	sc, err := sh.Open(ctx, token)
	if errors.Is(err, agent.ErrNotFound) {
		s.renderShare(w, r, http.StatusNotFound, web.ShareView{NotFound: true})
		return
	}
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	msgs := sc.Messages
	for i := range msgs {
		msgs[i].Siblings = nil // one path: no other versions to go to
	}
	v := web.ShareView{
		Chat:     web.NewChatView(sc.Conversation, msgs, sc.Omitted),
		Path:     agent.SharePrefix + token,
		SharedAt: sc.Share.CreatedAt,
		SignedIn: agent.PrincipalFrom(ctx).UserID != "",
	}
	v.Chat.Running = false
	apps := sc.Apps(s.appOf(ctx))
	for i, m := range v.Chat.Messages {
		if _, ok := apps[m.CallID]; ok && m.Kind == web.KindTool && m.HasResult {
			v.Chat.Messages[i].AppView = v.Path + "/apps/" + url.PathEscape(m.CallID) // handleShareApp
		}
	}
	s.renderShare(w, r, http.StatusOK, v)
}

// handleShareApp is GET /s/{token}/apps/{call_id}: the MCP App of a tool
// card the link shows, for its read-only view (the page's bridge offers
// the app no tools). The link is the permission; any other call is
// not_found (agent.Shares.ReadApp).
func (s *Server) handleShareApp(w http.ResponseWriter, r *http.Request) {
	sh, err := s.shares()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	read, err := sh.ReadApp(ctx, r.PathValue("token"), r.PathValue("call_id"), s.appOf(ctx))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeApp(w, r, read) // apps.go
}

// handleShareCopy is POST /s/{token}/copy: the signed-in user's copy of
// the shared transcript, then its page.
func (s *Server) handleShareCopy(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sh, err := s.shares()
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	c, err := sh.Copy(ctx, r.PathValue("token"))
	if errors.Is(err, agent.ErrNotFound) {
		s.renderShare(w, r, http.StatusNotFound, web.ShareView{NotFound: true})
		return
	}
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	http.Redirect(w, r, "/c/"+c.ID, http.StatusSeeOther)
}

// renderShare writes a share page with a fresh CSP nonce.
func (s *Server) renderShare(w http.ResponseWriter, r *http.Request, code int, v web.ShareView) {
	v.StyleURL, v.IconURL, v.ScriptURL = assets.URL("app.css"), assets.URL("icon.svg"), assets.URL("share.js")
	v.MathScriptURL, v.MathStyleURL = assets.URL("math.js"), assets.URL("math.css")
	v.MermaidScriptURL = assets.URL("mermaid.js")
	v.Nonce = pageHeaders(w.Header())
	w.WriteHeader(code)
	if err := web.SharePage(v).Render(templ.WithNonce(r.Context(), v.Nonce), w); err != nil {
		s.log.Debug("page_render", "path", "/s/", "err", err)
	}
}
