package store

import (
	"errors"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// A credential is absent until set, replaced in place, found as the latest
// of its server, and gone once deleted; the registration (subject "") is
// not a user's.
func TestCredential(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		c := newClock()
		s := open(t, dsn, Options{Now: c.now})
		ctx := t.Context()
		if _, err := s.Credential(ctx, "remote", "u1"); !errors.Is(err, agent.ErrNotFound) {
			t.Fatalf("unset: %v, want not found", err)
		}
		if _, err := s.LatestCredentialSubject(ctx, "remote"); !errors.Is(err, agent.ErrNotFound) {
			t.Fatalf("latest of none: %v, want not found", err)
		}
		for _, sub := range []string{"u1", "u2", ""} {
			c.advance(time.Second)
			if err := s.SetCredential(ctx, "remote", sub, []byte("sealed "+sub)); err != nil {
				t.Fatal(err)
			}
		}
		c.advance(time.Second)
		if err := s.SetCredential(ctx, "remote", "u1", []byte{0, 1, 2, 255}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Credential(ctx, "remote", "u1"); err != nil || string(got) != "\x00\x01\x02\xff" {
			t.Fatalf("u1 = %q, %v", got, err)
		}
		if got, err := s.LatestCredentialSubject(ctx, "remote"); err != nil || got != "u1" {
			t.Fatalf("latest = %q, %v; want u1", got, err)
		}
		if err := s.DeleteCredential(ctx, "remote", "u1"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Credential(ctx, "remote", "u1"); !errors.Is(err, agent.ErrNotFound) {
			t.Fatalf("deleted: %v", err)
		}
		if got, err := s.LatestCredentialSubject(ctx, "remote"); err != nil || got != "u2" {
			t.Fatalf("latest = %q, %v; want u2", got, err)
		}
		if got, err := s.Credential(ctx, "remote", ""); err != nil || string(got) != "sealed " {
			t.Fatalf("registration = %q, %v", got, err)
		}
	})
}
