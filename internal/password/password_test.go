package password

import (
	"context"
	"strings"
	"testing"
)

func TestHashVerify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := New(Costs{})
	const pw = "correct horse battery staple"
	a, err := h.Hash(ctx, pw)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := h.Hash(ctx, pw)
	if a == b {
		t.Error("two hashes of one password are equal: the salt is not random")
	}
	if !strings.HasPrefix(a, "$argon2id$v=19$m=19456,t=2,p=1$") || strings.Contains(a, pw) {
		t.Errorf("hash = %q", a)
	}
	for _, c := range []struct {
		hash, pw string
		want     bool
	}{{a, pw, true}, {b, pw, true}, {a, pw + "!", false}, {"", pw, false}} {
		got, err := h.Verify(ctx, c.hash, c.pw)
		if err != nil || got != c.want {
			t.Errorf("Verify(%.20q, %q) = %v, %v; want %v", c.hash, c.pw, got, err, c.want)
		}
	}
	// A hash made with other costs still checks.
	old, _ := New(Costs{Memory: 8 * 1024, Time: 1}).Hash(ctx, pw)
	if ok, err := h.Verify(ctx, old, pw); !ok || err != nil {
		t.Errorf("a hash of other costs: %v, %v", ok, err)
	}
	for _, bad := range []string{"plain", "$argon2i$v=19$m=1,t=1,p=1$AA$AA", "$argon2id$v=19$m=99999999,t=1,p=1$AA$AA"} {
		if _, err := h.Verify(ctx, bad, pw); err == nil {
			t.Errorf("Verify(%q) gave no error", bad)
		}
	}
}
