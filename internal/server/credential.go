package server

import (
	"context"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/internal/tool"
	"github.com/agentik/agentik/web"
)

// A user's own credentials of per-user MCP servers (DESIGN.md §12.3;
// internal/tool's peruser.go): set, listed and deleted by their owner
// only (agent.CredentialOwner), never shown back. Storing one accepts the
// user's credential items that wait for it (agent.Inbox.ResolveCredential).

// CredentialKeeper is the tool manager's side of them (Config.Credentials).
type CredentialKeeper interface {
	SetUserSecret(ctx context.Context, server, secret string) error
	DeleteUserSecret(ctx context.Context, server string) error
	UserCredentials(ctx context.Context) ([]tool.CredentialInfo, error)
	PerUserCredentials(ctx context.Context) ([]tool.CredentialInfo, error)
}

// credentialRows are ctx's user's per-user servers for the people page
// (nil when none runs as its caller).
func (s *Server) credentialRows(ctx context.Context) ([]web.CredentialRow, error) {
	k := s.cfg.Credentials
	if k == nil {
		return nil, nil
	}
	if _, err := agent.CredentialOwner(ctx); err != nil {
		return nil, nil
	}
	cs, err := k.PerUserCredentials(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]web.CredentialRow, len(cs))
	for i, c := range cs {
		rows[i] = web.CredentialRow{Server: c.Server, Kind: c.Kind, Set: c.Set}
	}
	return rows, nil
}

// credentialSet is set_credential's input.
type credentialSet struct {
	Server string `json:"server"`
	protocol.CredentialRequest
}

func (in *credentialSet) check() error {
	if err := need("server", in.Server); err != nil {
		return err
	}
	return need("secret", in.Secret)
}

// credentialName is delete_credential's input.
type credentialName struct {
	Server string `json:"server"`
}

func (in *credentialName) check() error { return need("server", in.Server) }

// credentialList is list_credentials' result.
type credentialList struct {
	Credentials []tool.CredentialInfo `json:"credentials"`
}

// credentialOp declares a credentials op: run gets the tool manager
// (not_found when no server runs as its caller).
func credentialOp[T any](name string, status int, run func(ctx context.Context, s *Server, k CredentialKeeper, in T) (any, error)) *op {
	return declare(name, status, func(ctx context.Context, s *Server, in T) (any, error) {
		if _, err := agent.CredentialOwner(ctx); err != nil {
			return nil, err
		}
		k := s.cfg.Credentials
		if k == nil {
			return nil, agent.Errorf(agent.CodeNotFound, "no tool server runs as its caller here (no mcp.json entry has \"auth\": %q)", tool.AuthPerUser)
		}
		return run(ctx, s, k, in)
	})
}

var (
	opListCredentials = credentialOp(protocol.OpListCredentials, 0, func(ctx context.Context, _ *Server, k CredentialKeeper, _ struct{}) (any, error) {
		cs, err := k.UserCredentials(ctx)
		if err != nil {
			return nil, err
		}
		return credentialList{Credentials: nonNil(cs)}, nil
	})
	opSetCredential = credentialOp(protocol.OpSetCredential, 0, func(ctx context.Context, s *Server, k CredentialKeeper, in credentialSet) (any, error) {
		if err := k.SetUserSecret(ctx, in.Server, in.Secret); err != nil {
			return nil, err
		}
		if s.cfg.Inbox != nil {
			owner, _ := agent.CredentialOwner(ctx)
			if err := s.cfg.Inbox.ResolveCredential(context.WithoutCancel(ctx), owner, in.Server); err != nil {
				s.log.Warn("credential_items_unresolved", "server", in.Server, "err", err)
			}
		}
		return protocol.Empty{}, nil
	})
	opDeleteCredential = credentialOp(protocol.OpDeleteCredential, 0, func(ctx context.Context, _ *Server, k CredentialKeeper, in credentialName) (any, error) {
		return protocol.Empty{}, k.DeleteUserSecret(ctx, in.Server)
	})
)
