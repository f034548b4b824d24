// Package scim is agentik's SCIM 2.0 service provider (RFC 7643, RFC
// 7644) at /scim/v2: an identity provider (Okta, Entra ID…) creates,
// changes, deactivates and deletes users and groups. A SCIM id is the
// agentik user or group id; every change goes through the centre
// (agent.Accounts, agent.Groups) as the admin "scim", so the audit log
// names it, and a user made inactive is disabled at once (their sockets
// close with 1008, their keys stop) by the same path an admin's disable
// takes. Errors are in SCIM's own schema.
package scim

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/agentik/agentik/internal/agent"
)

// Schema URNs (RFC 7643 §8.7, RFC 7644 §3).
const (
	SchemaUser         = "urn:ietf:params:scim:schemas:core:2.0:User"
	SchemaGroup        = "urn:ietf:params:scim:schemas:core:2.0:Group"
	SchemaListResponse = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
	SchemaPatchOp      = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
	SchemaError        = "urn:ietf:params:scim:api:messages:2.0:Error"
	SchemaSPConfig     = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"
	SchemaResourceType = "urn:ietf:params:scim:schemas:core:2.0:ResourceType"
	SchemaSchema       = "urn:ietf:params:scim:schemas:core:2.0:Schema"
)

// ContentType is SCIM's media type (RFC 7644 §3.1).
const ContentType = "application/scim+json"

// Prefix is where the service is served.
const Prefix = "/scim/v2"

// Actor is the user id SCIM's changes are made (and audited) as.
const Actor = "scim"

// Paging limits of a list (RFC 7644 §3.4.2.4).
const (
	defaultCount = 100
	maxCount     = 1000
)

// Config is what the handler needs.
type Config struct {
	// Token is the bearer token an identity provider sends
	// (AGENTIK_SCIM_TOKEN); "": SCIM is off and every path is 404.
	Token    string
	Accounts *agent.Accounts // nil: 503
	Groups   *agent.Groups   // nil: 503
	// Base is the external URL of the server (meta.location); "" names
	// locations by path only.
	Base   func(r *http.Request) string
	Logger *slog.Logger
}

// Handler serves /scim/v2.
type Handler struct {
	cfg Config
	log *slog.Logger
}

// New makes the handler.
func New(cfg Config) *Handler {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{cfg: cfg, log: log}
}

// Owns reports whether path is SCIM's.
func Owns(path string) bool { return path == Prefix || strings.HasPrefix(path, Prefix+"/") }

// Routes are the handler's routes, for the server's mux.
func (h *Handler) Routes() map[string]http.Handler {
	routes := map[string]func(w http.ResponseWriter, r *http.Request) error{
		"GET " + Prefix + "/ServiceProviderConfig": h.serviceProviderConfig,
		"GET " + Prefix + "/ResourceTypes":         h.resourceTypes,
		"GET " + Prefix + "/ResourceTypes/{id}":    h.resourceType,
		"GET " + Prefix + "/Schemas":               h.schemas,
		"GET " + Prefix + "/Schemas/{id}":          h.schema,
		"GET " + Prefix + "/Users":                 h.listUsers,
		"POST " + Prefix + "/Users":                h.createUser,
		"GET " + Prefix + "/Users/{id}":            h.getUser,
		"PUT " + Prefix + "/Users/{id}":            h.replaceUser,
		"PATCH " + Prefix + "/Users/{id}":          h.patchUser,
		"DELETE " + Prefix + "/Users/{id}":         h.deleteUser,
		"GET " + Prefix + "/Groups":                h.listGroups,
		"POST " + Prefix + "/Groups":               h.createGroup,
		"GET " + Prefix + "/Groups/{id}":           h.getGroup,
		"PUT " + Prefix + "/Groups/{id}":           h.replaceGroup,
		"PATCH " + Prefix + "/Groups/{id}":         h.patchGroup,
		"DELETE " + Prefix + "/Groups/{id}":        h.deleteGroup,
		Prefix + "/":                               func(http.ResponseWriter, *http.Request) error { return errNotFound("no such SCIM endpoint") },
	}
	out := make(map[string]http.Handler, len(routes))
	for pattern, f := range routes {
		out[pattern] = h.serve(f)
	}
	return out
}

// serve checks the token, puts SCIM's principal in the context and
// writes f's error in SCIM's schema.
func (h *Handler) serve(f func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.cfg.Token == "" {
			h.writeError(w, errNotFound("SCIM is not configured on this server (AGENTIK_SCIM_TOKEN)"))
			return
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(h.cfg.Token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentik SCIM"`)
			h.writeError(w, &Error{Status: http.StatusUnauthorized, Detail: "a SCIM request needs Authorization: Bearer AGENTIK_SCIM_TOKEN"})
			return
		}
		if h.cfg.Accounts == nil || h.cfg.Groups == nil {
			h.writeError(w, &Error{Status: http.StatusServiceUnavailable, Detail: "this server's store keeps no accounts"})
			return
		}
		ctx := agent.WithPrincipal(r.Context(), agent.Principal{UserID: Actor, Role: agent.RoleAdmin})
		if err := f(w, r.WithContext(ctx)); err != nil {
			h.writeError(w, err)
		}
	})
}

// Error is a SCIM error response (RFC 7644 §3.12).
type Error struct {
	Status   int
	ScimType string // invalidFilter, uniqueness, invalidValue, invalidSyntax, invalidPath, noTarget…
	Detail   string
}

func (e *Error) Error() string { return e.Detail }

func errNotFound(detail string) error { return &Error{Status: http.StatusNotFound, Detail: detail} }

func errBad(scimType, detail string) error {
	return &Error{Status: http.StatusBadRequest, ScimType: scimType, Detail: detail}
}

// scimError is err as a SCIM error: the centre's codes mapped.
func (h *Handler) scimError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	msg := agent.ErrorMessage(err)
	switch agent.ErrorCode(err) {
	case agent.CodeBadRequest:
		return &Error{Status: http.StatusBadRequest, ScimType: "invalidValue", Detail: msg}
	case agent.CodeConflict:
		return &Error{Status: http.StatusConflict, ScimType: "uniqueness", Detail: msg}
	case agent.CodeNotFound:
		return &Error{Status: http.StatusNotFound, Detail: msg}
	case agent.CodeForbidden:
		return &Error{Status: http.StatusForbidden, Detail: msg}
	case agent.CodeUnavailable:
		return &Error{Status: http.StatusServiceUnavailable, Detail: msg}
	}
	h.log.Error("scim_failed", "err", err)
	return &Error{Status: http.StatusInternalServerError, Detail: "internal error"}
}

func (h *Handler) writeError(w http.ResponseWriter, err error) {
	e := h.scimError(err)
	body := map[string]any{"schemas": []string{SchemaError}, "status": itoa(e.Status), "detail": e.Detail}
	if e.ScimType != "" {
		body["scimType"] = e.ScimType
	}
	write(w, e.Status, body)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// write answers v as SCIM JSON.
func write(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", ContentType+"; charset=utf-8")
	w.WriteHeader(status)
	if status != http.StatusNoContent {
		_ = json.NewEncoder(w).Encode(v)
	}
}

// decode reads r's body as JSON into v.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &Error{Status: http.StatusRequestEntityTooLarge, Detail: "the request body is too large"}
		}
		return errBad("invalidSyntax", "the body is not a JSON object: "+err.Error())
	}
	return nil
}

// location is the URL of a resource.
func (h *Handler) location(r *http.Request, kind, id string) string {
	base := ""
	if h.cfg.Base != nil {
		base = strings.TrimSuffix(h.cfg.Base(r), "/")
	}
	if id == "" {
		return base + Prefix + "/" + kind
	}
	return base + Prefix + "/" + kind + "/" + id
}

// ctxOf is r's context (SCIM's principal in it).
func ctxOf(r *http.Request) context.Context { return r.Context() }
