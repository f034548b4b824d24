package secret

import (
	"bytes"
	"errors"
	"testing"
)

func TestSealOpen(t *testing.T) {
	b, err := New("a key of at least sixteen")
	if err != nil {
		t.Fatal(err)
	}
	sealed := b.Seal([]byte("token"), []byte("row 1"))
	if bytes.Contains(sealed, []byte("token")) {
		t.Fatal("the plain text shows in the sealed value")
	}
	got, err := b.Open(sealed, []byte("row 1"))
	if err != nil || string(got) != "token" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := b.Open(sealed, []byte("row 2")); !errors.Is(err, ErrOpen) {
		t.Errorf("another row opened it: %v", err)
	}
	other, _ := New("another key of sixteen+")
	if _, err := other.Open(sealed, []byte("row 1")); !errors.Is(err, ErrOpen) {
		t.Errorf("another key opened it: %v", err)
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := b.Open(sealed, []byte("row 1")); !errors.Is(err, ErrOpen) {
		t.Errorf("a damaged value opened: %v", err)
	}
	if _, err := New("short"); err == nil {
		t.Error("a short key was taken")
	}
	r := Random()
	if got, err := r.Open(r.Seal([]byte("x"), nil), nil); err != nil || string(got) != "x" {
		t.Errorf("Random: %q %v", got, err)
	}
}
