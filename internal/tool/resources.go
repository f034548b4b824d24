package tool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/agentik/agentik/internal/agent"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Resources (MCP resources/list, resources/templates/list, resources/read)
// follow the 2025-11-25 revision and what mcp-go v1.2 speaks of the newer
// one; older servers answer the same requests. The Manager implements
// agent.Resources.

var _ agent.Resources = (*Manager)(nil)

// Resources lists the resources and templates of every ready server that
// has any, in config order. A server whose listing fails is left out (and
// logged): one broken server does not hide the others'.
func (m *Manager) Resources(ctx context.Context) (agent.ResourceList, error) {
	m.WaitStarted(ctx)
	out := agent.ResourceList{Resources: []agent.Resource{}, Templates: []agent.ResourceTemplate{}}
	for _, s := range m.list() {
		sess := s.ready()
		if sess == nil || sess.client.GetServerCapabilities().Resources == nil {
			continue
		}
		rs, ts, err := s.listResources(ctx, sess)
		if err != nil {
			if ctx.Err() != nil {
				return agent.ResourceList{}, ctx.Err()
			}
			s.log.Warn("mcp_list_resources", "err", s.cfg.redact(err.Error()))
			continue
		}
		out.Resources = append(out.Resources, rs...)
		out.Templates = append(out.Templates, ts...)
	}
	return out, nil
}

// listResources lists one server's resources and templates, all pages.
func (s *supervisor) listResources(ctx context.Context, sess *session) ([]agent.Resource, []agent.ResourceTemplate, error) {
	ctx, cancel := context.WithTimeout(ctx, s.m.opt.CallTimeout)
	defer cancel()
	res, err := sess.client.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil {
		sess.failIfBroken(ctx, err)
		return nil, nil, fmt.Errorf("list resources: %w", err)
	}
	var rs []agent.Resource
	for _, r := range res.Resources {
		rs = append(rs, agent.Resource{Server: s.cfg.Name, URI: r.URI, Name: r.Name, Title: r.Title,
			Description: r.Description, MimeType: r.MIMEType, Size: r.Size})
	}
	tres, err := sess.client.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	if err != nil {
		// Templates are optional: a server without them may answer
		// method not found.
		s.log.Debug("mcp_list_resource_templates", "err", s.cfg.redact(err.Error()))
		return rs, nil, nil
	}
	var ts []agent.ResourceTemplate
	for _, t := range tres.ResourceTemplates {
		tmpl := ""
		if t.URITemplate != nil && t.URITemplate.Template != nil {
			tmpl = t.URITemplate.Raw()
		}
		ts = append(ts, agent.ResourceTemplate{Server: s.cfg.Name, URITemplate: tmpl, Name: t.Name, Title: t.Title,
			Description: t.Description, MimeType: t.MIMEType})
	}
	return rs, ts, nil
}

// ReadResource reads one resource of server. Text is cut to
// MaxResultBytes, like a tool result.
func (m *Manager) ReadResource(ctx context.Context, server, uri string) (agent.ResourceRead, error) {
	s, sess, err := m.readyServer(ctx, server)
	if err != nil {
		return agent.ResourceRead{}, err
	}
	if sess.client.GetServerCapabilities().Resources == nil {
		return agent.ResourceRead{}, agent.Errorf(agent.CodeNotFound, "tool server %q has no resources", server)
	}
	rctx, cancel := context.WithTimeout(ctx, m.opt.CallTimeout)
	defer cancel()
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	res, err := sess.client.ReadResource(rctx, req)
	if err != nil {
		return agent.ResourceRead{}, s.requestError(rctx, sess, err, fmt.Sprintf("resource %q of tool server %q", uri, server))
	}
	out := agent.ResourceRead{Server: server, URI: uri, Contents: []agent.ResourceContents{}}
	for _, c := range res.Contents {
		switch v := c.(type) {
		case mcp.TextResourceContents:
			if isAppMIME(v.MIMEType) { // an MCP App's HTML (apps.go): whole, or refused
				if len(v.Text) > maxAppBytes {
					return agent.ResourceRead{}, agent.Errorf(agent.CodeBadRequest, "app %q of tool server %q is %d bytes long; at most %d are shown", uri, server, len(v.Text), maxAppBytes)
				}
				out.Contents = append(out.Contents, agent.ResourceContents{URI: v.URI, MimeType: v.MIMEType, Text: v.Text, UI: appMeta(v.Meta)})
				continue
			}
			out.Contents = append(out.Contents, agent.ResourceContents{URI: v.URI, MimeType: v.MIMEType, Text: capText(v.Text, m.opt.MaxResultBytes)})
		case mcp.BlobResourceContents:
			blob := v.Blob
			if isAppMIME(v.MIMEType) && len(blob) <= maxAppBytes*4/3+4 {
				out.Contents = append(out.Contents, agent.ResourceContents{URI: v.URI, MimeType: v.MIMEType, Blob: blob, UI: appMeta(v.Meta)})
				continue
			}
			if len(blob) > m.opt.MaxResultBytes*4 { // base64 of an image the model may see; more is dropped
				out.Contents = append(out.Contents, agent.ResourceContents{URI: v.URI, MimeType: v.MIMEType,
					Text: fmt.Sprintf("[binary %s, %d bytes of base64: too large to attach]", v.MIMEType, len(blob))})
				continue
			}
			out.Contents = append(out.Contents, agent.ResourceContents{URI: v.URI, MimeType: v.MIMEType, Blob: blob})
		}
	}
	return out, nil
}

// readyServer is the configured server named server with its live
// session: not_found for a name no entry has, unavailable while it is
// not ready.
func (m *Manager) readyServer(ctx context.Context, server string) (*supervisor, *session, error) {
	var s *supervisor
	for _, c := range m.list() {
		if c.cfg.Name == server {
			s = c
		}
	}
	if s == nil {
		return nil, nil, agent.Errorf(agent.CodeNotFound, "tool server %q not found; GET /agentik/tools lists the configured servers", server)
	}
	select { // a server in its first start is waited for, as Specs does
	case <-s.started:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	sess := s.ready()
	if sess == nil {
		st := s.snapshot()
		msg := fmt.Sprintf("tool server %q is %s", server, st.State)
		if st.Error != "" {
			msg += ": " + st.Error
		}
		return nil, nil, agent.Errorf(agent.CodeUnavailable, "%s", msg)
	}
	return s, sess, nil
}

// ready is the server's live session, or nil.
func (s *supervisor) ready() *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sess
}

// requestError turns a failed resources or prompts request into an
// *agent.Error: a broken connection or a timeout is unavailable; of the
// server's own answers, "not found" (RESOURCE_NOT_FOUND, or invalid
// params saying "not found", as the TypeScript SDK answers an unknown
// resource or prompt) is not_found, any other bad_request with its
// message. what names the thing asked for.
func (s *supervisor) requestError(ctx context.Context, sess *session, err error, what string) error {
	var te *transport.Error
	if ctx.Err() != nil || errors.As(err, &te) {
		sess.failIfBroken(ctx, err)
		return agent.Errorf(agent.CodeUnavailable, "%s: %s", what, capText(s.cfg.redact(err.Error()), 2000))
	}
	msg := capText(s.cfg.redact(err.Error()), 2000)
	if errors.Is(err, mcp.ErrResourceNotFound) || (errors.Is(err, mcp.ErrInvalidParams) && strings.Contains(strings.ToLower(msg), "not found")) {
		return agent.Errorf(agent.CodeNotFound, "%s not found: %s", what, msg)
	}
	return agent.Errorf(agent.CodeBadRequest, "%s: the server answered: %s", what, msg)
}

// resourceSubs are the resources whose updates the Manager follows, by
// server: subscribed again after every reconnect.
type resourceSubs struct {
	mu sync.Mutex
	m  map[string]map[string]bool // server → uri
}

func (r *resourceSubs) add(server, uri string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]map[string]bool{}
	}
	if r.m[server][uri] {
		return false
	}
	if r.m[server] == nil {
		r.m[server] = map[string]bool{}
	}
	r.m[server][uri] = true
	return true
}

func (r *resourceSubs) of(server string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for uri := range r.m[server] {
		out = append(out, uri)
	}
	return out
}

// Subscribe follows updates of a resource (MCP resources/subscribe, as of
// the 2025-11-25 revision; a server on a later one, whose subscriptions
// need a listen stream, is not asked): each notifications/resources/updated
// for it calls Options.OnResourceUpdated. A server that cannot subscribe
// is not an error: there is nothing to follow. The subscription is made
// again whenever the server reconnects.
func (m *Manager) Subscribe(ctx context.Context, server, uri string) error {
	s, sess, err := m.readyServer(ctx, server)
	if err != nil {
		return err
	}
	if !subscribable(sess) || !m.subs.add(server, uri) {
		return nil
	}
	return s.subscribe(ctx, sess, uri)
}

// subscribable reports whether sess's server takes resources/subscribe.
func subscribable(sess *session) bool {
	caps := sess.client.GetServerCapabilities()
	return caps.Resources != nil && caps.Resources.Subscribe && !mcp.IsModernProtocol(sess.client.ProtocolVersion())
}

func (s *supervisor) subscribe(ctx context.Context, sess *session, uri string) error {
	ctx, cancel := context.WithTimeout(ctx, s.m.opt.CallTimeout)
	defer cancel()
	req := mcp.SubscribeRequest{}
	req.Params.URI = uri
	if err := sess.client.Subscribe(ctx, req); err != nil {
		return s.requestError(ctx, sess, err, fmt.Sprintf("subscribing to resource %q of tool server %q", uri, s.cfg.Name))
	}
	return nil
}

// watchResources passes a new session's resource updates on to
// OnResourceUpdated and subscribes it again to what the Manager follows.
func (s *supervisor) watchResources(ctx context.Context, sess *session) {
	if s.m.opt.OnResourceUpdated == nil || !subscribable(sess) {
		return
	}
	sess.client.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != string(mcp.MethodNotificationResourceUpdated) || s.m.closed.Load() {
			return
		}
		if uri, ok := n.Params.AdditionalFields["uri"].(string); ok {
			s.m.opt.OnResourceUpdated(s.cfg.Name, uri)
		}
	})
	for _, uri := range s.m.subs.of(s.cfg.Name) {
		if err := s.subscribe(ctx, sess, uri); err != nil {
			s.log.Warn("mcp_resubscribe", "uri", uri, "err", err)
		}
	}
}
