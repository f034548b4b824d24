package agent

import "context"

// Roles of a principal.
const (
	RoleAdmin  = "admin"
	RoleMember = "member"
)

// LocalUser is the id of the implicit user of a server without accounts
// (no keys on loopback, or AGENTIK_API_KEYS): one admin who owns every
// conversation, including those of a database made before accounts.
const LocalUser = "local"

// Principal is who is calling: the server's middleware resolves it (a
// session cookie, a bearer key, an OIDC session, a trusted proxy header)
// and puts it in the request's context; the Runner decides every
// permission from it. Protocol adapters pass the request's context on and
// never filter on their own.
type Principal struct {
	UserID string `json:"id"`
	Role   string `json:"role"`
}

// Admin reports whether p may act on everyone's things.
func (p Principal) Admin() bool { return p.Role == RoleAdmin }

// Local is the principal of a server without accounts.
var Local = Principal{UserID: LocalUser, Role: RoleAdmin}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal ctx carries; without one (the
// process's own work: recovery, queued sends, schedules, tests) it is
// Local, the admin of a server without accounts.
func PrincipalFrom(ctx context.Context) Principal {
	if p, ok := ctx.Value(principalKey{}).(Principal); ok {
		return p
	}
	return Local
}
