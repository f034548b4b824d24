package server

import (
	"context"
	"slices"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// MCP Apps (docs/ARCHITECTURE.md, Browser UI: MCP Apps): the app a tool
// card shows calls tools of its own server through app_call. The op checks
// what the bridge already checked: app is a tool that names an app, and
// name is a tool of the same server; the runner checks the conversation
// (edit access, as for a send) and runs the call under the same approval
// rules as a model's (agent/appcall.go).

// appCallInput is an app_call.
type appCallInput struct {
	conversationRef
	protocol.AppCallRequest
}

func (in *appCallInput) check() error {
	if err := in.conversationRef.check(); err != nil {
		return err
	}
	if err := need("app", in.App); err != nil {
		return err
	}
	return need("name", in.Name)
}

// opAppCall starts an app's tool call: {call_id, message_id, seq} once its
// turn started; the result comes as the call's tool_result.
var opAppCall = declare(protocol.OpAppCall, 0, func(ctx context.Context, s *Server, in appCallInput) (any, error) {
	if err := s.appMayCall(ctx, in.App, in.Name); err != nil {
		return nil, err
	}
	return s.runner.AppCall(ctx, in.ConversationID, agent.AppCallInput{Name: in.Name, Arguments: in.Arguments})
})

// appMayCall refuses a call of name by the app of tool app unless both are
// tools of one server and app names an MCP App.
func (s *Server) appMayCall(ctx context.Context, app, name string) error {
	for _, ts := range s.toolServers(ctx).Servers {
		if _, ok := ts.Apps[app]; !ok {
			continue
		}
		if !slices.Contains(ts.Tools, name) {
			s.log.Warn("app_call_refused", "app", app, "tool", agent.Shorten(name, 80), "server", ts.Name)
			return agent.Errorf(agent.CodeForbidden, "the app of %s may call only tools of server %s; %q is not one", app, ts.Name, agent.Shorten(name, 80))
		}
		return nil
	}
	return agent.Errorf(agent.CodeNotFound, "tool %q names no MCP App", agent.Shorten(app, 80))
}
